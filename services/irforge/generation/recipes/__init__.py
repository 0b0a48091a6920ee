"""One module per recipe; RECIPES maps the command's RECIPE argument to its module."""

from irforge.generation.recipes import airbench_longdoc, airbench_qa, infosearch

RECIPES = {"airbench-qa": airbench_qa, "airbench-longdoc": airbench_longdoc, "infosearch": infosearch}
