"""The rule registry: one explicit tuple, in code order."""

from .dl101_persistent_workers_without_workers import PersistentWorkersWithoutWorkers
from .dl102_prefetch_without_workers import PrefetchWithoutWorkers
from .dl103_rejected_argument_combination import RejectedCombination
from .dl104_crash_with_zero_workers import CrashWithZeroWorkers
from .dl105_attribute_set_after_construction import AttributeSetAfterConstruction
from .dl201_unseeded_dataset_rng import UnseededDatasetRng
from .dl202_half_seeded_run import HalfSeededRun
from .dl203_worker_seed_ignores_epoch import WorkerSeedIgnoresEpoch
from .dl301_unguarded_entry_point import UnguardedEntryPoint
from .dl302_unpicklable_worker_payload import UnpicklableWorkerPayload
from .dl303_unguarded_start_method import UnguardedStartMethod
from .dl401_loader_rebuilt_in_loop import LoaderRebuiltInLoop
from .dl402_persistent_workers_disabled import PersistentWorkersDisabled
from .dl403_stale_dataset_in_persistent_workers import StaleDatasetInPersistentWorkers
from .dl404_missing_shutdown_method import MissingShutdownMethod
from .dl405_distributed_sampler_without_set_epoch import DistributedSamplerWithoutSetEpoch
from .dl410_synchronous_loading import SynchronousLoading
from .dl501_unsharded_iterable_dataset import UnshardedIterableDataset
from .dl502_single_use_iterable_dataset import SingleUseIterableDataset
from .dl601_handle_shared_with_workers import HandleSharedWithWorkers
from .dl602_cuda_in_worker_code import CudaInWorkerCode
from .dl603_cuda_default_device_with_shuffle import CudaDefaultDeviceWithShuffle
from .dl620_containers_copied_on_read import ContainersCopiedOnRead

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
