project = "vramcalc embed check"
html_theme = "furo"
templates_path = ["_templates"]
