"""The test suite's own settings: README's command (`-n auto`) runs one torch thread per xdist worker."""
import os

import pytest


@pytest.mark.skipif(not os.environ.get("PYTEST_XDIST_WORKER"), reason="only under pytest-xdist (-n)")
def test_an_xdist_worker_runs_one_torch_thread():
    import torch

    assert os.environ.get("OMP_NUM_THREADS") == "1"
    assert torch.get_num_threads() == 1
