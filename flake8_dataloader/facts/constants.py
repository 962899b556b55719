"""Qualified names the rules recognise."""

# Ignite's `idist.auto_dataloader(...)` builds a DataLoader from DataLoader's keywords (frameworks.py).
IGNITE_LOADERS = frozenset({"ignite.distributed.auto_dataloader", "ignite.distributed.auto.auto_dataloader"})

DEFAULT_LOADER_NAMES = frozenset(
    {
        "torch.utils.data.DataLoader",
        "torch.utils.data.dataloader.DataLoader",
        "torchdata.stateful_dataloader.StatefulDataLoader",
        "torchdata.stateful_dataloader.stateful_dataloader.StatefulDataLoader",
    }
) | IGNITE_LOADERS

DATASET_BASES = frozenset(
    {
        "torch.utils.data.Dataset",
        "torch.utils.data.dataset.Dataset",
        "torch.utils.data.IterableDataset",
        "torch.utils.data.dataset.IterableDataset",
    }
)
ITERABLE_DATASET_BASES = frozenset(
    {"torch.utils.data.IterableDataset", "torch.utils.data.dataset.IterableDataset"}
)
# Third-party dataset classes that are map-style torch Datasets underneath.
DATASET_BASE_PREFIXES = ("torchvision.datasets.",)

RNG_CONSTRUCTORS = frozenset(
    {
        "numpy.random.default_rng",
        "numpy.random.RandomState",
        "numpy.random.Generator",
        "numpy.random.mtrand.RandomState",
        "random.Random",
        "torch.Generator",
    }
)

GLOBAL_NONTORCH_SEEDERS = frozenset({"random.seed", "numpy.random.seed"})
# A seed drawn from these (or `os.urandom`) is entropy, not a wish for reproducible runs.
ENTROPY_MODULES = ("time.", "secrets.")
TORCH_SEEDERS = frozenset(
    {
        "torch.manual_seed",
        "torch.random.manual_seed",
        "pytorch_lightning.seed_everything",
        "pytorch_lightning.utilities.seed.seed_everything",
        "lightning.seed_everything",
        "lightning.pytorch.seed_everything",
        "lightning.fabric.seed_everything",
        "lightning_fabric.seed_everything",
        "lightning_fabric.utilities.seed.seed_everything",
        "transformers.set_seed",
        "transformers.trainer_utils.set_seed",
        "accelerate.utils.set_seed",
        "accelerate.set_seed",
    }
)

RANDOM_SAMPLERS = frozenset(
    {
        "torch.utils.data.RandomSampler",
        "torch.utils.data.sampler.RandomSampler",
        "torch.utils.data.SubsetRandomSampler",
        "torch.utils.data.sampler.SubsetRandomSampler",
        "torch.utils.data.WeightedRandomSampler",
        "torch.utils.data.sampler.WeightedRandomSampler",
    }
)
DISTRIBUTED_SAMPLERS = frozenset(
    {
        "torch.utils.data.DistributedSampler",
        "torch.utils.data.distributed.DistributedSampler",
    }
)

PER_ITERATOR_SEED_SOURCES = frozenset({"torch.initial_seed", "torch.random.initial_seed"})

MULTIPROCESSING_MODULES = frozenset({"multiprocessing", "torch.multiprocessing"})
CONTEXTLIB_CLOSING = frozenset({"contextlib.closing"})

# Callables that consume an iterable passed to them.
ITERATING_BUILTINS = frozenset(
    {"builtins.iter", "builtins.list", "builtins.tuple", "builtins.sorted", "builtins.sum"}
)
# Callables that wrap an iterable for a `for` header without consuming it first.
ITERABLE_WRAPPERS_LAST_NAME = frozenset(
    {"enumerate", "zip", "tqdm", "trange", "track", "islice", "cycle", "chain", "iter"}
)
# Calls that take a loader but never iterate it (excluded from "passed to a call in a loop"). `next`
# advances an iterator already made (a DataLoader itself is no iterator): no new workers.
NON_ITERATING_CALLS = frozenset(
    {"len", "isinstance", "print", "type", "id", "hasattr", "getattr", "setattr", "repr", "str", "callable", "next"}
)
# Methods that hand back the same loader wrapped (Accelerate, Lightning Fabric).
LOADER_WRAPPER_METHODS = frozenset({"prepare", "prepare_data_loader", "setup_dataloaders"})
