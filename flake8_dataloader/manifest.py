"""What flake8 needs before it reads a file, without importing LibCST or any rule.

flake8 imports every installed plugin in every process on every run, whatever
`--select` says: the plugin module and what it imports at load time must cost next
to nothing. The rules (which import LibCST) load on the first file that passes the
prefilter. These tuples restate what the rules declare; `tests/test_startup.py`
checks that they agree, so a new rule cannot be forgotten here.
"""

# Every rule"s code, in registry order.
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
# The union of the rules" TRIGGERS, weakest alternatives only (see tokens.triggers): a file
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
# Every rule"s CONDITION (gate.py), by code: a file for which no selected code"s condition holds is not
# analysed. Restated from the rules (tests/test_startup.py checks that they agree).
CONDITIONS = {
    "DL101": (("persistent",), ("imported_builder",)),
    "DL102": (("prefetch",), ("imported_builder",)),
    "DL103": (("rejected_argument",), ("imported_builder",)),
    "DL104": (("persistent", "workers"), ("prefetch", "workers"), ("imported_builder",)),
    "DL105": (("attribute_set",),),
    "DL201": (("rng",), ("class_with_base", "imported_rng_class")),
    "DL202": (("seed", "workers"), ("seed", "shuffles"), ("imported_builder",)),
    "DL203": (("worker_fn",),),
    "DL301": (("workers", "module_code"), ("imported_builder", "module_code")),
    "DL302": (("workers", "payload"), ("workers", "imported_payload"), ("imported_builder",)),
    "DL303": (("start_method",),),
    "DL401": (("workers", "loop"), ("imported_builder", "loop")),
    "DL402": (("restartable",), ("imported_builder",)),
    "DL403": (("persistent",), ("imported_builder",)),
    "DL404": (("shutdown",),),
    "DL405": (("sampler_given",), ("imported_builder",)),
    "DL410": (("loader",), ("imported_builder",)),
    "DL501": (("workers", "stream_class"), ("workers", "imported_stream"), ("imported_builder",)),
    "DL502": (("iter_returns_self", "loader"), ("loader", "imported_stream"), ("imported_builder",)),
    "DL601": (("handle",),),
    "DL602": (("workers", "cuda"), ("workers", "imported_cuda"), ("imported_builder",)),
    "DL603": (("cuda_default", "shuffles"), ("cuda_default", "imported_builder")),
    "DL620": (("workers",), ("imported_builder",)),
}
# Codes the fix command rewrites.
FIXABLE = ("DL101", "DL102", "DL103", "DL104", "DL301", "DL402", "DL404", "DL601")
