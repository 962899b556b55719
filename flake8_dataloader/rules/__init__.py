"""The rule registry: one explicit tuple, in code order."""

from .dl1_construction import (
    AttributeSetAfterConstruction,
    CrashWithZeroWorkers,
    PersistentWorkersWithoutWorkers,
    PrefetchWithoutWorkers,
    RejectedCombination,
)
from .dl2_randomness import HalfSeededRun, UnseededDatasetRng, WorkerSeedIgnoresEpoch
from .dl3_start_method import UnguardedEntryPoint, UnguardedStartMethod, UnpicklableWorkerPayload
from .dl4_lifecycle import (
    DistributedSamplerWithoutSetEpoch,
    LoaderRebuiltInLoop,
    MissingShutdownMethod,
    PersistentWorkersDisabled,
    StaleDatasetInPersistentWorkers,
    SynchronousLoading,
)
from .dl5_correctness import SingleUseIterableDataset, UnshardedIterableDataset
from .dl6_resources import (
    ContainersCopiedOnRead,
    CudaDefaultDeviceWithShuffle,
    CudaInWorkerCode,
    HandleSharedWithWorkers,
)

RULES = (
    PersistentWorkersWithoutWorkers,
    PrefetchWithoutWorkers,
    RejectedCombination,
    CrashWithZeroWorkers,
    AttributeSetAfterConstruction,
    UnseededDatasetRng,
    HalfSeededRun,
    WorkerSeedIgnoresEpoch,
    UnguardedEntryPoint,
    UnpicklableWorkerPayload,
    UnguardedStartMethod,
    LoaderRebuiltInLoop,
    PersistentWorkersDisabled,
    StaleDatasetInPersistentWorkers,
    MissingShutdownMethod,
    DistributedSamplerWithoutSetEpoch,
    SynchronousLoading,
    UnshardedIterableDataset,
    SingleUseIterableDataset,
    HandleSharedWithWorkers,
    CudaInWorkerCode,
    CudaDefaultDeviceWithShuffle,
    ContainersCopiedOnRead,
)
