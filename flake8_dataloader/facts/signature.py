"""DataLoader's parameter table (torch 2.13), checked against torch by a test."""

POSITIONAL = (
    "dataset",
    "batch_size",
    "shuffle",
    "sampler",
    "batch_sampler",
    "num_workers",
    "collate_fn",
    "pin_memory",
    "drop_last",
    "timeout",
    "worker_init_fn",
    "multiprocessing_context",
    "generator",
)
KEYWORD_ONLY = (
    "prefetch_factor",
    "persistent_workers",
    "pin_memory_device",
    "in_order",
)
ALL_PARAMETERS = POSITIONAL + KEYWORD_ONLY
