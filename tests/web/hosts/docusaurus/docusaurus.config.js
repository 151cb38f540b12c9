// The README's Docusaurus recipe: the script from the config's scripts, the elements in MDX pages.
export default {
  title: 'vramcalc embed check',
  url: 'http://docs.test',
  baseUrl: '/',
  onBrokenLinks: 'warn',
  scripts: [{src: 'https://HOST/embed.js'}],
  presets: [['classic', {docs: {routeBasePath: 'docs'}, blog: false}]],
};
