"""The Neuron TEST DOUBLES (tests/doubles/) pinned to the documented API of the real packages.

No Neuron SDK installs here, so nothing else would notice a double that accepts a call the real
package refuses. The signatures below are copied from the Neuron SDK's API reference:
"PyTorch NeuronX Tracing API for Inference" (torch-neuronx 2.9, Neuron 2.26-2.31) for
torch_neuronx.trace and torch_neuronx.dynamic_batch, and the archived "PyTorch-Neuron trace
python API" (torch-neuron 1.13.1) for torch_neuron.trace. docs/accelerators.md says what this
does and does not prove.
"""
import inspect

import pytest

from tests.neuron_doubles import neuron_doubles

DOCUMENTED = {
    "torch_neuronx.trace": "(func, example_inputs, *_, input_output_aliases={}, compiler_workdir=None, "
                           "compiler_args=None, partitioner_config=None, inline_weights_to_neff=True, cpu_backend=False)",
    "torch_neuronx.dynamic_batch": "(neuron_script)",
    "torch_neuron.trace": "(model, example_inputs, **kwargs)",
}
# torch_neuron.trace's documented keyword arguments; it forwards all others to torch.jit.trace.
TORCH_NEURON_KEYWORDS = {"compiler_args", "compiler_timeout", "compiler_workdir", "subgraph_builder_function",
                         "minimum_segment_size", "single_fusion_ratio_threshold", "fallback", "dynamic_batch_size",
                         "optimizations", "separate_weights"}


@pytest.fixture
def doubles():
    with neuron_doubles():
        import torch_neuron
        import torch_neuronx

        yield {"torch_neuronx": torch_neuronx, "torch_neuron": torch_neuron}


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_double_signature_is_the_documented_one(doubles, name):
    module, function = name.split(".")
    assert doubles[module].IS_TEST_DOUBLE
    assert str(inspect.signature(getattr(doubles[module], function))) == DOCUMENTED[name]


def test_torch_neuron_double_takes_the_documented_keywords(doubles):
    assert doubles["torch_neuron"].NEURON_KEYWORDS == TORCH_NEURON_KEYWORDS


def test_dynamic_batch_changes_the_traced_module_in_place(doubles):
    """Documented: it modifies `neuron_script` in place and returns a reference to it, so the
    flag is part of what torch.jit.save writes (compiler/accel_compile.py applies it before saving)."""
    import torch

    torch_neuronx = doubles["torch_neuronx"]
    example = tuple(torch.ones(2, 8, dtype=torch.int64) for _ in range(3))
    traced = torch_neuronx.trace(lambda a, b, c: (a + b + c).float(), example)
    with pytest.raises(Exception, match=r"input shape \[3, 8\] differs from the compiled"):
        traced(*(torch.ones(3, 8, dtype=torch.int64) for _ in range(3)))
    assert torch_neuronx.dynamic_batch(traced) is traced
    assert traced(*(torch.ones(3, 8, dtype=torch.int64) for _ in range(3))).shape == (3, 8)
    with pytest.raises(Exception, match=r"non-batch dims \(9,\) != compiled \(8,\)"):
        traced(*(torch.ones(3, 9, dtype=torch.int64) for _ in range(3)))
