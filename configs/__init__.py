"""featlearn's shipped configs (``featlearn.configs``): YAML files only, read by the command line."""

from featlearn._guard import require_featlearn_namespace

require_featlearn_namespace(__name__, "configs")
