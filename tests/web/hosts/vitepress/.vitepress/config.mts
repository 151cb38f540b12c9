// The README's VitePress recipe (the head, and the element left to the browser by Vue's compiler).
export default {
  title: 'vramcalc embed check',
  head: [['script', {src: 'https://HOST/embed.js'}]],
  vue: {template: {compilerOptions: {isCustomElement: (tag) => tag.startsWith('vramcalc-')}}},
  themeConfig: {nav: [{text: 'Second page', link: '/two'}]},
};
