"""Capstan checkpoints in PyTorch: read, build the model, run it, write back.

A Capstan checkpoint is a safetensors file holding a PyTorch state dict (the
names and layouts of docs/semantics.md §1) and, in the header's
``__metadata__``, ``format`` (``capstan/1``) and ``config``: the model's JSON
config (capsnet.Config). This module needs only the standard library and
torch (no ``safetensors`` package, no numpy of its own):

    import capstan_torch
    model, meta = capstan_torch.load("runs/default/checkpoint.safetensors")
    norms, recon = model(x)            # x: (B, C, H, W) floats in [0, 1]
    pred = norms.argmax(1)             # the predicted classes
    capstan_torch.save(model, None, "edited.safetensors")  # loads in the engine again

``CapsNet(config)`` builds the model of any config the engine accepts: every
preset (sabour, sabour-small, deep and its grid, the tiny test models) and
every routing kind (``rba``: routing by agreement with ``iters`` iterations,
``uniform``, ``self-attention``, ``self-attention-in``; docs/semantics.md §3).
Its parameters carry the checkpoint's tensor names, so
``model.load_state_dict(tensors, strict=True)`` takes a checkpoint's tensors
as they are. ``forward(x, y=None)`` returns the class capsules' lengths
(B, classes), sqrt(|v|^2 + 1e-7) as the engine computes them, and the
reconstruction (B, C*H*W), the decoder masked by the labels y when given (as
in training and tools/dump) or by the predicted classes (as in tools/infer).
``forward(x, y, trace=[])`` also appends every capsule layer's capsules and
last-iteration couplings to the list.

Command line: ``python3 capstan_torch.py CHECKPOINT`` prints the model and
its metadata.
"""

import json
import math
import os
import struct
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["CapsNet", "load", "save", "read_safetensors", "write_safetensors",
           "squash", "margin_loss", "CHECKPOINT_FORMAT", "SQUASH_EPS", "ROUTING_KINDS"]

#: The "format" metadata of a float checkpoint (capsnet.CheckpointFormat).
CHECKPOINT_FORMAT = "capstan/1"
#: The int8 models of package quant start their "format" with this.
INT8_FORMAT_PREFIX = "capstan-int8/"
#: ε inside the square roots of squash and of the output norms (kernels.SquashEps).
SQUASH_EPS = 1e-7
#: The routing kinds of capsnet.RoutingKinds.
ROUTING_KINDS = ("rba", "uniform", "self-attention", "self-attention-in")

# safetensors dtype names and their torch dtypes (the engine writes F32, and
# I8 for int8 models; the others are read for completeness).
_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
    "U8": torch.uint8, "BOOL": torch.bool,
}
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}


# ---------------------------------------------------------------------------
# safetensors, standard library + torch

def read_safetensors(path):
    """Read a safetensors file: returns (tensors, metadata), tensors a dict
    name -> torch tensor (its own memory, the file's dtype and shape) and
    metadata the header's ``__metadata__`` map of strings ({} when absent)."""
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise ValueError("%s: not a safetensors file (shorter than the 8-byte header length)" % path)
        (hlen,) = struct.unpack("<Q", raw)
        size = os.fstat(f.fileno()).st_size
        if hlen > min(size - 8, 100 << 20):
            raise ValueError("%s: not a safetensors file (header length %d out of range)" % (path, hlen))
        header = json.loads(f.read(hlen).decode("utf-8"))
        data = f.read()
    if not isinstance(header, dict):
        raise ValueError("%s: corrupt header (not a JSON object)" % path)
    meta = header.pop("__metadata__", None) or {}
    tensors = {}
    for name, e in header.items():
        dtype = _DTYPES.get(e.get("dtype"))
        if dtype is None:
            raise ValueError("%s: tensor %r: unsupported dtype %r" % (path, name, e.get("dtype")))
        shape, (start, end) = list(e["shape"]), e["data_offsets"]
        esize = torch.empty((), dtype=dtype).element_size()
        count = math.prod(shape)
        if not (0 <= start <= end <= len(data)) or end - start != count * esize:
            raise ValueError("%s: tensor %r: data_offsets %r do not hold shape %r of %s" % (path, name, [start, end], shape, e["dtype"]))
        tensors[name] = _from_bytes(data[start:end], dtype, esize).reshape(shape)
    return tensors, meta


def _from_bytes(b, dtype, esize):
    """A tensor of dtype (owning its memory) from little-endian bytes."""
    if len(b) == 0:
        return torch.empty(0, dtype=dtype)
    b = bytearray(b)
    if sys.byteorder != "little" and esize > 1:
        for k in range(0, len(b), esize):
            b[k:k + esize] = b[k:k + esize][::-1]
    return torch.frombuffer(b, dtype=dtype).clone()


def _to_bytes(t):
    """The little-endian bytes of tensor t (row-major)."""
    t = t.detach().to("cpu").contiguous().reshape(-1)
    n = t.numel() * t.element_size()
    if n == 0:
        return b""
    buf = bytearray(n)
    torch.frombuffer(buf, dtype=t.dtype).copy_(t)
    if sys.byteorder != "little" and t.element_size() > 1:
        e = t.element_size()
        for k in range(0, n, e):
            buf[k:k + e] = buf[k:k + e][::-1]
    return bytes(buf)


def write_safetensors(path, tensors, metadata=None):
    """Write tensors (name -> torch tensor) and metadata (name -> string) as
    the engine does (safetensors.Encode): tensors sorted by name, data
    contiguous in that order, the JSON header padded with spaces to a
    multiple of 8 bytes. The write is atomic: a temporary file in the same
    directory, fsync, rename."""
    header, blobs, off = {}, [], 0
    if metadata:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError("metadata must map strings to strings, got %r: %r" % (k, v))
        header["__metadata__"] = dict(metadata)
    for name in sorted(tensors):
        if name == "__metadata__":
            raise ValueError("tensor name __metadata__ is reserved")
        t = tensors[name]
        if t.dtype not in _DTYPE_NAMES:
            raise TypeError("tensor %r: dtype %s has no safetensors name" % (name, t.dtype))
        b = _to_bytes(t)
        header[name] = {"dtype": _DTYPE_NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".safetensors", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(struct.pack("<Q", len(h)))
            f.write(h)
            for b in blobs:
                f.write(b)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ---------------------------------------------------------------------------
# the model

def squash(s, kind, dim=-1):
    """The capsule non-linearity (docs/semantics.md §3), ε = 1e-7 inside the
    square root: "mazzia" (1 - exp(-|s|)) s/|s|, "sabour" |s|²/(1+|s|²) s/|s|."""
    n2 = (s * s).sum(dim, keepdim=True)
    n = torch.sqrt(n2 + SQUASH_EPS)
    if kind == "mazzia":
        return (1 - torch.exp(-n)) * s / n
    if kind == "sabour":
        return n2 / (1 + n2) * s / n
    raise ValueError("squash %r is not mazzia or sabour" % (kind,))


def margin_loss(norms, y, loss):
    """The margin loss per sample (docs/semantics.md §4) of the output norms
    (B, classes) and labels y (B,), with the config's "loss" constants."""
    t = F.one_hot(y, norms.shape[1]).to(norms.dtype)
    return (t * F.relu(loss["m_plus"] - norms) ** 2 +
            loss["lambda"] * (1 - t) * F.relu(norms - loss["m_minus"]) ** 2).sum(1)


class CapsNet(nn.Module):
    """The model of a Capstan config (a dict, or its JSON text).

    Parameters have the checkpoint's names: each convolution NAME.weight
    (out, in/groups, k, k) and NAME.bias, each capsule layer NAME.W
    (n_out, n_in, d_out, d_in) and NAME.b (n_in, n_out), the decoder's
    dec.fcK.weight (out, in) and dec.fcK.bias. A dotted name nests
    submodules, so ``state_dict()`` has exactly those keys. NAME.b is a
    parameter even where the engine does not train it (Sabour's fixed zero
    prior, learn_prior false, or uniform routing, which never reads it);
    ``requires_grad`` is False there.
    """

    def __init__(self, config):
        super().__init__()
        if isinstance(config, (str, bytes)):
            config = json.loads(config)
        self.config = json.loads(json.dumps(config))  # a private copy
        c = self.config
        ch, h, w = c["input"]
        self.input_shape = (ch, h, w)
        self._convs = []
        for cv in c["convs"]:
            k = cv.get("kernel", 0) or h  # 0: the whole remaining (square) input
            if cv.get("kernel", 0) == 0 and h != w:
                raise ValueError("conv %s: kernel 0 needs a square input, got %dx%d" % (cv["name"], h, w))
            stride, pad = cv["stride"], cv.get("pad", 0)
            groups = ch if cv.get("depthwise") else 1
            node = self._node(cv["name"])
            node.register_parameter("weight", nn.Parameter(torch.empty(cv["out"], ch // groups, k, k)))
            node.register_parameter("bias", nn.Parameter(torch.empty(cv["out"])))
            self._convs.append((node, stride, pad, groups, bool(cv.get("relu"))))
            ch, h, w = cv["out"], (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
        d = c["primary_dim"]
        if ch % d:
            raise ValueError("primary_dim %d does not divide the last conv's %d channels" % (d, ch))
        self.primary = (ch // d, d, h, w)  # maps, dim, height, width
        n = ch // d * h * w
        self._caps = []
        for cc in c["caps"]:
            kind = cc["routing"]
            if kind not in ROUTING_KINDS:
                raise ValueError("caps %s: routing %r is not one of %s" % (cc["name"], kind, ", ".join(ROUTING_KINDS)))
            node = self._node(cc["name"])
            node.register_parameter("W", nn.Parameter(torch.empty(cc["out"], n, cc["dim"], d)))
            trained = bool(cc.get("learn_prior")) and kind != "uniform"
            node.register_parameter("b", nn.Parameter(torch.zeros(n, cc["out"]), requires_grad=trained))
            self._caps.append((node, kind, cc.get("iters", 0), cc["squash"]))
            n, d = cc["out"], cc["dim"]
        if n != c["classes"]:
            raise ValueError("classes %d: the last capsule layer has %d capsules" % (c["classes"], n))
        self._dec = []
        sizes = list(c["decoder"]) + [math.prod(self.input_shape)]
        fan_in = n * d
        for i, out in enumerate(sizes):
            node = self._node("dec.fc%d" % (i + 1))
            node.register_parameter("weight", nn.Parameter(torch.empty(out, fan_in)))
            node.register_parameter("bias", nn.Parameter(torch.empty(out)))
            self._dec.append(node)
            fan_in = out
        self.reset_parameters()

    def _node(self, dotted):
        """The submodule at a dotted path, created (empty) as needed."""
        m = self
        for part in dotted.split("."):
            child = m._modules.get(part)
            if child is None:
                child = nn.Module()
                m.add_module(part, child)
            m = child
        return m

    def reset_parameters(self, seed=None):
        """Initialise as the engine's Params.Init draws (not its numbers):
        conv and linear weights and biases uniform in ±1/sqrt(fan_in), votes
        matrices as the layer's init/init_std say, priors 0."""
        g = torch.Generator().manual_seed(seed) if seed is not None else None
        with torch.no_grad():
            for node, *_ in self._convs:
                bound = 1 / math.sqrt(node.weight[0].numel())
                node.weight.uniform_(-bound, bound, generator=g)
                node.bias.uniform_(-bound, bound, generator=g)
            for node in self._dec:
                bound = 1 / math.sqrt(node.weight.shape[1])
                node.weight.uniform_(-bound, bound, generator=g)
                node.bias.uniform_(-bound, bound, generator=g)
            for (node, *_), cc in zip(self._caps, self.config["caps"]):
                n_out, n_in, d_out, d_in = node.W.shape
                fan_in, fan_out = d_in * n_out * n_in, d_out * n_out * n_in
                init = cc.get("init", "")
                if init == "he_normal":  # Keras: a normal cut at ±2 std, rescaled
                    t = torch.randn(node.W.shape, generator=g)
                    while (bad := t.abs() > 2).any():
                        t[bad] = torch.randn(int(bad.sum()), generator=g)
                    node.W.copy_(t * (math.sqrt(2 / fan_in) / 0.87962566103423978))
                elif init == "glorot_uniform":
                    bound = math.sqrt(6 / (fan_in + fan_out))
                    node.W.uniform_(-bound, bound, generator=g)
                else:
                    node.W.normal_(0, cc.get("init_std") or 0.05, generator=g)
                node.b.zero_()

    def capsules(self, x, trace=None):
        """The class capsules v (B, classes, d) of images x (B, C, H, W);
        trace (a list), when given, receives {"v": primary capsules} and per
        capsule layer {"v": its capsules, "c": its last couplings (B, n_in, n_out)}."""
        if x.dim() == 3:
            x = x.unsqueeze(1)
        h = x.reshape(x.shape[0], *self.input_shape)
        for node, stride, pad, groups, relu in self._convs:
            h = F.conv2d(h, node.weight, node.bias, stride=stride, padding=pad, groups=groups)
            if relu:
                h = F.relu(h)
        maps, d, hh, ww = self.primary
        # capsule m·H·W + y·W + x is channels m·d … m·d+d−1 at (y, x)
        u = h.reshape(-1, maps, d, hh, ww).permute(0, 1, 3, 4, 2).reshape(-1, maps * hh * ww, d)
        u = squash(u, self.config["primary_squash"])
        if trace is not None:
            trace.append({"v": u})
        for node, kind, iters, sq in self._caps:
            u, c = self._layer(u, node.W, node.b, kind, iters, sq)
            if trace is not None:
                trace.append({"v": u, "c": c})
        return u

    @staticmethod
    def _layer(u, W, b, kind, iters, sq):
        """One capsule layer: votes û[b,i,j] = W[j,i]·u[b,i], then routing
        (docs/semantics.md §3). Returns (v, last couplings)."""
        uhat = torch.einsum("jiod,bid->bijo", W, u)  # (B, n_in, n_out, d_out)
        if kind == "uniform":
            c = torch.full(uhat.shape[:3], 1.0 / uhat.shape[2], dtype=uhat.dtype, device=uhat.device)
            return squash((c.unsqueeze(-1) * uhat).sum(1), sq), c
        if kind in ("self-attention", "self-attention-in"):
            a = (uhat * uhat.sum(1, keepdim=True)).sum(-1) / math.sqrt(uhat.shape[3])
            c = torch.softmax(a, dim=2 if kind == "self-attention" else 1) + b
            return squash((c.unsqueeze(-1) * uhat).sum(1), sq), c
        logits = b.unsqueeze(0).expand(uhat.shape[0], -1, -1)  # routing by agreement
        for t in range(max(iters, 1)):
            c = torch.softmax(logits, dim=2)
            v = squash((c.unsqueeze(-1) * uhat).sum(1), sq)
            if t < iters - 1:
                logits = logits + (uhat * v.unsqueeze(1)).sum(-1)
        return v, c

    def decode(self, v, y):
        """The reconstruction (B, C*H*W) of capsules v (B, classes, d) masked
        by classes y (B,): FC-ReLU … FC-sigmoid on the j-major flattening."""
        mask = F.one_hot(y, v.shape[1]).to(v.dtype).unsqueeze(-1)
        h = (v * mask).flatten(1)
        for k, node in enumerate(self._dec):
            h = F.linear(h, node.weight, node.bias)
            h = torch.sigmoid(h) if k == len(self._dec) - 1 else F.relu(h)
        return h

    def forward(self, x, y=None, trace=None):
        """(norms, recon) of images x (B, C, H, W): the class capsules'
        lengths sqrt(|v|² + 1e-7) and the reconstruction masked by y, or by
        the predicted classes (largest norm, first on a tie) when y is None."""
        v = self.capsules(x, trace)
        norms = torch.sqrt((v * v).sum(-1) + SQUASH_EPS)
        if y is None:
            y = norms.argmax(1)
        return norms, self.decode(v, y)

    def loss(self, x, y):
        """The training loss of docs/semantics.md §4 (mean over the batch of
        margin loss + reconstruction weight · Σ (recon − x)²), the
        reconstruction weight α, or α/pixels for loss.recon "mean"."""
        norms, recon = self(x, y)
        lc = self.config["loss"]
        pixels = recon.shape[1]
        alpha = lc["alpha"] / pixels if lc.get("recon") == "mean" else lc["alpha"]
        lr = ((recon - x.reshape(x.shape[0], -1)) ** 2).sum(1)
        return (margin_loss(norms, y, lc) + alpha * lr).mean()


# ---------------------------------------------------------------------------
# checkpoints

def load(path, config=None, strict=True):
    """Read a checkpoint and build its model: returns (model, metadata),
    the weights loaded with load_state_dict(strict=strict), the model in
    eval mode. config (dict or JSON) names the model of a plain state dict
    saved without "config" metadata; a checkpoint that has one uses its
    own. metadata["config"] is the config's JSON text as stored."""
    tensors, meta = read_safetensors(path)
    fmt = meta.get("format", "")
    if fmt.startswith(INT8_FORMAT_PREFIX):
        raise ValueError("%s is an int8 model (format %s), not a float checkpoint" % (path, fmt))
    if "config" in meta and meta["config"]:
        config = meta["config"]
    elif config is None:
        raise ValueError("%s: no model config in the metadata: pass config=" % path)
    model = CapsNet(config)
    model.load_state_dict({k: t.to(torch.float32) for k, t in tensors.items()}, strict=strict)
    model.eval()
    return model, meta


def save(model, config, path, metadata=None):
    """Write a checkpoint the engine loads (tools/infer, tools/dump,
    train -resume of a finished run): model is a CapsNet or a state dict of
    the checkpoint's names and shapes; config (dict or JSON text) is its
    model, None to take a CapsNet's own. The metadata holds "format"
    (capstan/1) and "config", plus the extra string entries given (e.g. the
    loaded checkpoint's "epoch"). Tensors are written as F32."""
    if config is None:
        if not isinstance(model, CapsNet):
            raise ValueError("save: config is needed for a state dict")
        config = model.config
    if isinstance(config, (str, bytes)):
        config = json.loads(config)
    state = model.state_dict() if isinstance(model, nn.Module) else model
    CapsNet(config).load_state_dict(state, strict=True)  # names and shapes checked before writing
    for k, t in state.items():
        if not torch.isfinite(t).all():
            raise ValueError("save: tensor %r has a NaN or infinite value (the engine refuses it)" % k)
    meta = {k: str(v) for k, v in (metadata or {}).items()}
    meta["format"] = CHECKPOINT_FORMAT
    meta["config"] = json.dumps(config, separators=(",", ":"))
    write_safetensors(path, {k: t.detach().to(torch.float32) for k, t in state.items()}, meta)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python3 capstan_torch.py CHECKPOINT")
    m, md = load(sys.argv[1])
    print(m)
    for k in sorted(md):
        v = md[k]
        print("%s: %s" % (k, v if len(v) < 200 else v[:200] + "…"))
