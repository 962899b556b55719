"""Messages say what, why and the fix, and name what they refer to (a loader's line)."""

from flake8_dataloader.engine import analyse

STREAM = (
    "from torch.utils.data import DataLoader, IterableDataset\n"
    "\n"
    "\n"
    "class Stream(IterableDataset):\n"
    "    def __init__(self, items):\n"
    "        self.items = iter(items)\n"
    "\n"
    "    def __iter__(self):\n"
    "        return self\n"
    "\n"
    "    def __next__(self):\n"
    "        return next(self.items)\n"
    "\n"
    "\n"
    "def train(items):\n"
    "    fresh = DataLoader(Stream(items), num_workers=2)\n"
    "    loader = DataLoader(Stream(items), {arguments})\n"
    "    for epoch in range(3):\n"
    "        for batch in fresh:\n"
    "            pass\n"
    "        for batch in loader:\n"
    "            pass\n"
)


def messages(source, code):
    return [(line, message) for line, _, found, message in analyse(source) if found == code]


def test_dl502_names_the_loader_that_empties_and_why():
    persistent = STREAM.replace("{arguments}", "num_workers=2, persistent_workers=True")
    assert messages(persistent, "DL502") == [
        (8, "DL502 Stream.__iter__ returns self: the loader on line 17 (its persistent workers keep the used-up "
            "copy) gets an empty stream after its first epoch; make __iter__ a generator (yield)")
    ]
    single = STREAM.replace("{arguments}", "batch_size=4")
    assert messages(single, "DL502") == [
        (8, "DL502 Stream.__iter__ returns self: the loader on line 17 (a single process reuses the one dataset "
            "object) gets an empty stream after its first epoch; make __iter__ a generator (yield)")
    ]


def test_dl502_fresh_workers_every_epoch_are_no_trigger():
    assert messages(STREAM.replace("{arguments}", "num_workers=2"), "DL502") == []


def test_dl401_asks_for_persistent_workers_too():
    source = (
        "from torch.utils.data import DataLoader\n\n\n"
        "def train(ds):\n"
        "    for epoch in range(3):\n"
        "        loader = DataLoader(ds, num_workers=2)\n"
        "        for batch in loader:\n"
        "            pass\n"
    )
    assert messages(source, "DL401") == [
        (6, "DL401 DataLoader is rebuilt on every loop iteration; build it once before the loop with "
            "persistent_workers=True (workers restart each epoch)")
    ]


def test_suggested_expressions_are_valid_python_with_conditional_worker_counts():
    source = (
        "from torch.utils.data import DataLoader\n\n\n"
        "def train(ds, workers, cached, prefetch):\n"
        "    fixed = DataLoader(ds, num_workers=0 if cached else workers, persistent_workers=True,\n"
        "                       prefetch_factor=prefetch or 2)\n"
        "    loader = DataLoader(ds, num_workers=0 if cached else workers)\n"
        "    for epoch in range(3):\n"
        "        for batch in loader:\n"
        "            pass\n"
    )
    assert messages(source, "DL104") == [
        (5, "DL104 persistent_workers=True raises ValueError when num_workers (0 if cached else workers) is 0; "
            "use persistent_workers=(0 if cached else workers) > 0"),
        (6, "DL104 prefetch_factor=prefetch or 2 raises ValueError when num_workers (0 if cached else workers) is 0; "
            "use prefetch_factor=prefetch or 2 if (0 if cached else workers) > 0 else None"),
    ]
    assert messages(source, "DL402") == [
        (7, "DL402 DataLoader workers are restarted every epoch; pass persistent_workers=(0 if cached else workers) "
            "> 0 to keep them between epochs"),
    ]


def test_dl203_names_the_function_once():
    template = (
        "import random\n\nfrom torch.utils.data import DataLoader\n\n\n"
        "def {name}(worker_id):\n    random.seed(worker_id)\n\n\n"
        "loader = DataLoader(range(8), num_workers=2, worker_init_fn={name})\n"
    )
    tail = (" seeds from worker_id and constants only: every epoch and every run replays the same random stream; "
            "seed from torch.initial_seed() or get_worker_info().seed")
    assert messages(template.format(name="worker_init_fn"), "DL203") == [(6, "DL203 worker_init_fn" + tail)]
    assert messages(template.format(name="seed_worker"), "DL203") == [(6, "DL203 worker_init_fn seed_worker" + tail)]


def test_dl202_agrees_with_what_differs():
    template = (
        "import random\n\nfrom torch.utils.data import DataLoader\n\nrandom.seed(0)\n"
        "loader = DataLoader(range(8), {arguments})\n"
    )
    head = "DL202 random/np.random are seeded but torch is not and this loader has no generator=: "
    tail = " between runs; call torch.manual_seed(seed) or pass generator="
    assert messages(template.format(arguments="shuffle=True"), "DL202") == [
        (6, head + "shuffle order differs" + tail)]
    assert messages(template.format(arguments="num_workers=2"), "DL202") == [
        (6, head + "worker seeds differ" + tail)]
    assert messages(template.format(arguments="shuffle=True, num_workers=2"), "DL202") == [
        (6, head + "shuffle order and worker seeds differ" + tail)]
