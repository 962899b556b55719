"""What flake8 needs before it reads a file, without importing LibCST or any rule.

flake8 imports every installed plugin in every process on every run, whatever
`--select` says: the plugin module and what it imports at load time must cost next
to nothing. The rules (which import LibCST) load on the first file that passes the
prefilter. These tuples restate what the rules declare; `tests/test_startup.py`
checks that they agree, so a new rule cannot be forgotten here.
"""

# Every rule's code, in registry order.
CODES = (
    "DL101", "DL102", "DL103", "DL104", "DL105",
    "DL201", "DL202", "DL203",
    "DL301", "DL302", "DL303",
    "DL401", "DL402", "DL403", "DL404", "DL405", "DL410",
    "DL501", "DL502",
    "DL601", "DL602", "DL603", "DL620",
)
# Off unless selected (`--extend-select`).
DEFAULT_OFF = ("DL410", "DL620")
# The union of the rules' TRIGGERS, weakest alternatives only (see tokens.triggers): a file
# that contains none of these alternatives cannot give a finding.
TRIGGERS = (
    ("DataLoader",),
    ("TrainingArguments",),
    ("auto_dataloader",),
    ("set_start_method",),
    ("worker_id",),
    ("worker_init_fn",),
    ("Dataset", "File"),
    ("Dataset", "Generator"),
    ("Dataset", "HDFStore"),
    ("Dataset", "ParquetFile"),
    ("Dataset", "Random"),
    ("Dataset", "RandomState"),
    ("Dataset", "ZipFile"),
    ("Dataset", "connect"),
    ("Dataset", "default_rng"),
    ("Dataset", "load"),
    ("Dataset", "memory_map"),
    ("Dataset", "open"),
    ("torchvision", "File"),
    ("torchvision", "Generator"),
    ("torchvision", "HDFStore"),
    ("torchvision", "ParquetFile"),
    ("torchvision", "Random"),
    ("torchvision", "RandomState"),
    ("torchvision", "ZipFile"),
    ("torchvision", "connect"),
    ("torchvision", "default_rng"),
    ("torchvision", "load"),
    ("torchvision", "memory_map"),
    ("torchvision", "open"),
)
# Codes the fix command rewrites.
FIXABLE = ("DL101", "DL102", "DL103", "DL104", "DL301", "DL402", "DL404", "DL601")
