"""CPU encoding backends: a sentence-transformers model's transformer run by ONNX Runtime or
OpenVINO instead of torch, in fp32 or int8.

Why not `SentenceTransformer(..., backend="onnx"|"openvino")`: sentence-transformers 6.2.0 loads
those through optimum-onnx and optimum-intel, and the newest releases of both on PyPI (0.1.0 and
2.2.0) cap transformers below 4.58 and 5.6 and fail on import with the transformers 5.x that
sentence-transformers 6 itself needs (optimum.exporters.onnx imports transformers'
`get_parameter_dtype`, gone in 5.x; optimum.intel imports a qwen2_vl class gone too). So irforge
exports the same graph (the transformer's forward, last_hidden_state) itself with torch.onnx,
quantises it with onnxruntime's own dynamic quantiser (what sentence-transformers'
export_dynamic_quantized_onnx_model calls through optimum) or compresses OpenVINO's weights with
nncf, and puts the runtime in place of the torch transformer inside the loaded SentenceTransformer:
the tokenizer, pooling, prompts and normalisation stay sentence-transformers' own.

The exported model is written once into irforge's cache, a folder per model weights + backend +
precision, staged under a temporary name and renamed into place (a killed export leaves no folder
that looks complete); nothing is downloaded.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import warnings
from pathlib import Path

import numpy as np

from irforge.common.files import remove_stale_temporaries, temporary_name, write_json_atomic, writing
from irforge.models.errors import ModelOptionError

BACKENDS = ("torch", "onnx", "openvino")
BACKEND_PRECISIONS = ("fp32", "int8")
# What each backend needs, and the irforge extra that installs it.
REQUIRED_MODULES = {"onnx": ("onnxruntime", "onnx"), "openvino": ("openvino", "nncf", "onnx")}
# torch.onnx's TorchScript exporter; opset 17 has LayerNormalization as one node.
OPSET = 17
MODEL_FILES = {"onnx": "model.onnx", "openvino": "model.xml"}
MANIFEST = "irforge-export.json"
# How int8 is made, recorded in the manifest and the encoder identity: a change here changes vectors.
INT8_METHODS = {
    "onnx": "onnxruntime quantize_dynamic: int8 weights per channel, uint8 activations quantised per batch",
    "openvino": "nncf compress_weights INT8_ASYM: int8 weights per channel, float activations (data-free)",
}


class BackendUnavailable(ModelOptionError):
    """A backend whose packages are not installed."""


def check_backend(backend: str, precision: str) -> None:
    """Raise ModelOptionError for an unknown backend or precision, BackendUnavailable (naming the
    extra to install) when its packages are missing; before anything loads."""
    if backend not in BACKENDS:
        raise ModelOptionError(f"--encoder-backend {backend!r}: must be one of {', '.join(BACKENDS)}")
    if precision not in BACKEND_PRECISIONS:
        raise ModelOptionError(f"--encoder-precision {precision!r}: must be one of {', '.join(BACKEND_PRECISIONS)}")
    if backend == "torch":
        if precision != "fp32":
            raise ModelOptionError(f"--encoder-precision {precision} needs --encoder-backend onnx or openvino "
                                   "(torch encodes in fp32, or --precision float16/bfloat16 on a GPU)")
        return
    missing = [name for name in REQUIRED_MODULES[backend] if importlib.util.find_spec(name) is None]
    if missing:
        raise BackendUnavailable(f"--encoder-backend {backend} needs {', '.join(missing)}, not installed: "
                                 f"pip install 'irforge[{backend}]'")


def export_root() -> Path:
    """$IRFORGE_CACHE_DIR/encoders, else the user cache dir's (the embedding cache's folder)."""
    from irforge.common.memo import cache_folder

    return cache_folder() / "encoders"


def export_folder(root: Path, model_name: str, revision: str, backend: str, precision: str) -> Path:
    """The folder of one export: keyed by the model, its weights (revision or digest), backend, precision."""
    safe = "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in f"{model_name}-{revision}")
    return root / f"{safe}-{backend}-{precision}"


def exported_model(model, model_name: str, revision: str, backend: str, precision: str,
                   root: Path | None = None) -> Path:
    """The exported model file for a loaded SentenceTransformer `model`: from the cache, or exported
    now (staged, then renamed into place; another process's finished export wins a race)."""
    final = export_folder(root or export_root(), model_name, revision, backend, precision)
    if (final / MANIFEST).is_file():
        return final / MODEL_FILES[backend]
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(final.parent, final.name)
    staging = final.parent / temporary_name(final.name, "staging")
    try:
        with writing(final):
            staging.mkdir()
            method = _export(model, staging, backend, precision)
            write_json_atomic(staging / MANIFEST, {"model": model_name, "revision": revision, "backend": backend,
                                                   "precision": precision, "method": method, "opset": OPSET})
            try:
                os.rename(staging, final)
            except OSError:
                if not (final / MANIFEST).is_file():
                    raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final / MODEL_FILES[backend]


def _input_names(model) -> list[str]:
    return list(model[0].tokenizer(["x"], return_tensors="pt").keys())


def _export_onnx(model, path: Path) -> None:
    import torch

    transformer = model[0].model
    names = _input_names(model)

    class LastHiddenState(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = transformer

        def forward(self, *inputs):
            return self.transformer(**dict(zip(names, inputs))).last_hidden_state

    sample = model[0].tokenizer(["an example", "a longer example sentence"], padding=True, return_tensors="pt")
    axes = {name: {0: "batch", 1: "tokens"} for name in [*names, "last_hidden_state"]}
    # The TorchScript tracer warns generically (advanced indexing "if indices include negative
    # values", a Python bool in the attention mask code) about patterns this model's graph does not
    # hit: tests/models/test_encoder_backends.py checks the exported model's vectors against torch's
    # (cosine >= 0.999). Shown to a user, the warnings read as if the vectors were wrong.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(LastHiddenState().eval(), tuple(sample[name] for name in names), str(path),
                          input_names=names, output_names=["last_hidden_state"], dynamic_axes=axes,
                          opset_version=OPSET, dynamo=False)


def _export(model, folder: Path, backend: str, precision: str) -> str:
    fp32 = folder / "fp32.onnx"
    _export_onnx(model, fp32)
    if backend == "onnx":
        if precision == "int8":
            from onnxruntime.quantization import QuantType, quantize_dynamic

            quantize_dynamic(str(fp32), str(folder / MODEL_FILES["onnx"]), weight_type=QuantType.QInt8, per_channel=True)
            fp32.unlink()
        else:
            fp32.rename(folder / MODEL_FILES["onnx"])
        return "torch.onnx TorchScript export" + (f"; {INT8_METHODS['onnx']}" if precision == "int8" else "")
    import openvino

    converted = openvino.convert_model(str(fp32))
    if precision == "int8":
        import nncf

        converted = nncf.compress_weights(converted, mode=nncf.CompressWeightsMode.INT8_ASYM)
    # compress_to_fp16=False: save_model would otherwise store fp16 weights, changing the vectors.
    openvino.save_model(converted, str(folder / MODEL_FILES["openvino"]), compress_to_fp16=False)
    fp32.unlink()
    return "torch.onnx export, openvino.convert_model" + (f"; {INT8_METHODS['openvino']}" if precision == "int8" else "")


def _runner(path: Path, backend: str, config, names: list[str]):
    """A torch Module answering the transformer's forward (its inputs as keywords) with
    {"last_hidden_state": tensor}, so sentence-transformers' Transformer module calls it unchanged."""
    import torch

    if backend == "onnx":
        import onnxruntime

        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        run = lambda feeds: session.run(None, feeds)[0]  # noqa: E731
    else:
        import openvino

        compiled = openvino.Core().compile_model(str(path), "CPU")
        run = lambda feeds: np.asarray(compiled(feeds)[0])  # noqa: E731

    class Runtime(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.config = config   # sentence-transformers reads the dimension and output flags from it

        def forward(self, **features):
            feeds = {name: features[name].cpu().numpy() for name in names}
            return {"last_hidden_state": torch.from_numpy(run(feeds))}

    return Runtime()


def use_backend(model, model_name: str, revision: str, backend: str, precision: str, root: Path | None = None):
    """Put `backend` in place of the torch transformer of a loaded SentenceTransformer (in place;
    returns it). The model's first module must be a text Transformer whose output is last_hidden_state."""
    first = model[0]
    output = getattr(first, "modality_config", {}).get("text", {}).get("method_output_name")
    if not hasattr(first, "tokenizer") or output not in ("last_hidden_state", ("last_hidden_state",), ["last_hidden_state"]):
        raise ModelOptionError(f"--encoder-backend {backend}: model {model_name} is not a text transformer with "
                               "token embeddings (last_hidden_state); use --encoder-backend torch")
    path = exported_model(model, model_name, revision, backend, precision, root)
    first.model = _runner(path, backend, first.model.config, _input_names(model))
    return model
