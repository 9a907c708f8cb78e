#!/usr/bin/env python3
"""Trains the tiny LFM2-MoE that writes Go, notebook 06's model, on one GPU with transformers 5.17.

    python3 scripts/train/train_lfm2.py --corpus .build/train/go-corpus.tar.xz --out DIR
                                        [--time-budget 420] [--deadline UNIX_SECONDS] [--steps N] [--seed S]

scripts/train/gpu-train.sh runs it, then reference_lfm2.py, on the GPU machine in one command.

1. Reads the corpus (scripts/train/corpus.sh: the Go distribution's source, train/ and val/ split by
   package) and trains a byte-level BPE of 4096 ids on train/ with HF tokenizers, in the structure
   engine/llm/tokenizer loads (gocorpus.py).
2. Builds an Lfm2MoeForCausalLM with every feature of LFM2-8B-A1B at a small size: conv and attention
   layers from layer_types, GQA, q/k norms, two dense layers, 16 experts of which a token uses 4,
   expert_bias in use, tied embeddings. It checks the parameter count (at most 12 M).
3. Trains it on random 1024-token windows of the train stream (bf16 autocast, fp32 weights, AdamW,
   warmup then cosine), seeded. transformers keeps expert_bias as a buffer that no gradient reaches
   (top-k is not differentiable) and never changes it; this script updates it after every step with
   the auxiliary-loss-free balancing of DeepSeek-V3: b_i += rate * sign(mean load - load_i), the load
   counted from the experts each token was routed to in that step.
4. Stops cleanly at the time budget, measured on the wall clock from the first step; with --steps 0
   (the default) it first times 30 steps and fixes the number of steps that fit the budget, so that
   the learning-rate schedule ends with the run: the card records that number, and --steps N with
   the same seed repeats the run (up to the GPU's floating-point non-determinism in a few kernels:
   torch's deterministic mode is on, warn-only).
5. Rounds the weights to bf16 (the stored model), measures the validation loss of the stored model in
   fp32 on all of val/, and writes DIR in the hub layout: config.json, model.safetensors (bf16, the
   experts as feed_forward.experts.N.w1/w2/w3 like the LFM2 checkpoints), generation_config.json,
   tokenizer.json, tokenizer_config.json; and loss_curve.csv (step, tokens, seconds, lr, train_loss,
   val_loss: gpulab's Go code draws it), training.json (what the run did, for reference_lfm2.py and
   the card), README.md (the model card), LICENSE (Go's) and corpus.txt (the corpus's SOURCE).

--deadline (a Unix time) caps the budget so that the whole GPU command ends in time: training stops
--reserve seconds before it, for what follows (saving, the references, packing).
"""
import argparse
import csv
import json
import math
import os
import platform
import random
import shutil
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS; read when CUDA starts

import numpy as np
import torch
import torch.nn.functional as F
import transformers
import tokenizers
from safetensors import safe_open
from safetensors.torch import save_file

import gocorpus

VOCAB = 4096
LAYER_TYPES = ["conv", "conv", "full_attention", "conv", "conv", "conv", "full_attention", "conv"]
MAX_PARAMS = 12_000_000
CALIBRATION = (10, 30)  # with --steps 0: the steps timed to fix the number of steps
PROMPTS = ["func main() {", "package main\n\nimport (\n", "func (b *Buffer) Len() int {"]


def model_config(seq):
    """LFM2-8B-A1B's architecture at about 11 M parameters: hidden 256 in 4 query heads of 64 (the
    real head size) over 2 KV heads; 8 layers, attention at 2 and 6, the rest short convolutions;
    layers 0 and 1 dense, the others 16 experts of width 96, 4 per token, with expert_bias."""
    return transformers.Lfm2MoeConfig(
        vocab_size=VOCAB, hidden_size=256, num_hidden_layers=len(LAYER_TYPES), layer_types=LAYER_TYPES,
        num_attention_heads=4, num_key_value_heads=2, num_dense_layers=2, intermediate_size=768,
        num_experts=16, num_experts_per_tok=4, moe_intermediate_size=96, use_expert_bias=True,
        norm_topk_prob=True, routed_scaling_factor=1.0, conv_L_cache=3, norm_eps=1e-5,
        rope_parameters={"rope_type": "default", "rope_theta": 1e6}, max_position_embeddings=seq,
        initializer_range=0.02, tie_word_embeddings=True, pad_token_id=0, bos_token_id=1, eos_token_id=2)


def eager_experts(model):
    """Runs the experts with transformers' own loop (the reference computation), where the version
    lets a model choose (transformers 5 may default to grouped_mm)."""
    if hasattr(model, "set_experts_implementation"):
        model.set_experts_implementation("eager")
    return getattr(model.config, "_experts_implementation", "eager")


def moe_blocks(model):
    """(layer, block) of every MoE feed-forward: the modules with an experts child."""
    return [(i, layer.feed_forward) for i, layer in enumerate(model.model.layers) if hasattr(layer.feed_forward, "experts")]


class ExpertCounter:
    """Counts, per MoE layer, the tokens routed to each expert while active: a forward pre-hook on
    each block's experts module reads the top_k_index that transformers' router chose."""

    def __init__(self, model, experts):
        self.blocks = moe_blocks(model)
        self.counts = torch.zeros(len(self.blocks), experts, dtype=torch.float32, device=model.device)
        self.active = False
        self.handles = [block.experts.register_forward_pre_hook(self._hook(j), with_kwargs=True)
                        for j, (_, block) in enumerate(self.blocks)]

    def _hook(self, j):
        def hook(module, args, kwargs):
            if not self.active:
                return
            idx = kwargs.get("top_k_index", args[1] if len(args) > 1 else None)
            if idx is None or idx.dtype not in (torch.int64, torch.int32):
                raise RuntimeError("layer %d: the experts module was called without top_k_index as its second "
                                   "argument (args %s, kwargs %s): this transformers version routes differently"
                                   % (self.blocks[j][0], [type(a) for a in args], list(kwargs)))
            self.counts[j] += torch.bincount(idx.reshape(-1), minlength=self.counts.shape[1]).float()
        return hook

    def update_biases(self, rate):
        """The auxiliary-loss-free step: each expert's bias moves by rate towards the mean load."""
        with torch.no_grad():
            err = self.counts.mean(dim=1, keepdim=True) - self.counts
            for j, (_, block) in enumerate(self.blocks):
                block.expert_bias.add_(rate * torch.sign(err[j]).to(block.expert_bias.dtype))
        self.counts.zero_()

    def remove(self):
        for h in self.handles:
            h.remove()


def windows(stream, starts, seq):
    """The rows stream[s : s + seq + 1] for each start, as int64 ids on stream's device."""
    return stream[starts[:, None] + torch.arange(seq + 1, device=stream.device)].long()


def next_token_loss(model, x):
    """Mean cross-entropy of predicting x[:, 1:] from x[:, :-1], and the number of targets."""
    logits = model(input_ids=x[:, :-1], use_cache=False).logits
    loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1), reduction="sum")
    return loss, x[:, 1:].numel()


@torch.no_grad()
def val_loss(model, stream, seq, batch, limit=None, autocast=True):
    """Mean loss per token over consecutive seq-token windows of the val stream (the last one
    shorter): all of them, or limit of them spread evenly."""
    n = (len(stream) - 1) // seq
    starts = list(range(0, n * seq, seq))
    tail = len(stream) - 1 - n * seq
    if limit is not None and limit < n:
        starts, tail = [starts[i * n // limit] for i in range(limit)], 0
    total, count = 0.0, 0
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
        for i in range(0, len(starts), batch):
            s = torch.tensor(starts[i:i + batch], device=stream.device)
            loss, k = next_token_loss(model, windows(stream, s, seq))
            total, count = total + float(loss), count + k
        if tail > 0:
            loss, k = next_token_loss(model, stream[None, n * seq:].long())
            total, count = total + float(loss), count + k
    return total / count, count


def lr_at(step, total, a):
    """Linear warmup over a.warmup steps, then a cosine from a.lr down to a.min_lr * a.lr at total
    (before total is known, during calibration, the warmup alone applies)."""
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    if total is None:
        return a.lr
    p = min(1.0, (step - a.warmup) / max(1, total - a.warmup))
    return a.lr * (a.min_lr + (1 - a.min_lr) * 0.5 * (1 + math.cos(math.pi * p)))


def param_groups(model):
    """AdamW groups: weight decay on matrices (and the tied embedding), none on norms; expert_bias
    is left out (the balancing rule moves it)."""
    decay, plain = [], []
    for name, p in model.named_parameters():
        if name.endswith("expert_bias"):
            continue
        (decay if p.dim() >= 2 else plain).append(p)
    return decay, plain


def train(model, counter, train_stream, val_stream, a, budget):
    """The training loop; returns (curve rows, summary)."""
    dev = train_stream.device
    decay, plain = param_groups(model)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay}, {"params": plain, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8, fused=True)
    gen = torch.Generator().manual_seed(a.seed)
    total = a.steps or None
    eval_every = a.eval_every or (max(a.log_every, (total // 20) // a.log_every * a.log_every) if total else None)
    curve, step, stop = [], 0, "steps"
    acc, acc_n, gnorm = torch.zeros((), device=dev), 0, float("nan")
    tokens_per_step = a.batch * a.seq

    t0 = time.monotonic()
    v, _ = val_loss(model, val_stream, a.seq, a.batch, limit=a.val_windows)
    eval_s = time.monotonic() - t0
    curve.append({"step": 0, "tokens": 0, "seconds": 0.0, "lr": 0.0, "train_loss": None, "val_loss": v})
    print("step 0: val loss %.4f (a %d-window evaluation takes %.2f s)" % (v, a.val_windows, eval_s))
    model.train()
    t0, t_cal = time.monotonic(), None
    while True:
        elapsed = time.monotonic() - t0
        if total is not None and step >= total:
            break
        if elapsed >= budget:
            stop = "time"
            break
        if total is None and step == CALIBRATION[0]:
            torch.cuda.synchronize()
            t_cal = time.monotonic()
        if total is None and step == CALIBRATION[1]:
            torch.cuda.synchronize()
            per_step = (time.monotonic() - t_cal) / (CALIBRATION[1] - CALIBRATION[0])
            evals = 20
            total = step + int(0.96 * (budget - (time.monotonic() - t0) - evals * eval_s) / per_step)
            eval_every = max(a.log_every, (total // evals) // a.log_every * a.log_every)
            print("calibrated: %.1f ms a step, %.0f tokens/s: %d steps fit the %.0f s budget (evaluation every %d)"
                  % (1e3 * per_step, tokens_per_step / per_step, total, budget, eval_every))
        lr = lr_at(step, total, a)
        for g in opt.param_groups:
            g["lr"] = lr
        starts = torch.randint(0, len(train_stream) - a.seq - 1, (a.batch,), generator=gen).to(dev)
        x = windows(train_stream, starts, a.seq)
        counter.active = True
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss, k = next_token_loss(model, x)
        counter.active = False
        loss = loss / k
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        opt.step()
        counter.update_biases(a.bias_rate)
        acc, acc_n, step = acc + loss.detach(), acc_n + 1, step + 1
        if step % a.log_every == 0 or (total is not None and step == total):
            train_l, gnorm = float(acc) / acc_n, float(norm)
            acc, acc_n = torch.zeros((), device=dev), 0
            row = {"step": step, "tokens": step * tokens_per_step, "seconds": time.monotonic() - t0, "lr": lr,
                   "train_loss": train_l, "val_loss": None}
            if not math.isfinite(train_l):
                raise RuntimeError("step %d: the training loss is %s" % (step, train_l))
            if eval_every and (step % eval_every == 0 or step == total):
                model.eval()
                row["val_loss"], _ = val_loss(model, val_stream, a.seq, a.batch, limit=a.val_windows)
                model.train()
            curve.append(row)
            print("step %d/%s  %.0f s  lr %.2e  train %.4f%s  |grad| %.3f" % (
                step, total or "?", row["seconds"], lr, train_l,
                "  val %.4f" % row["val_loss"] if row["val_loss"] is not None else "", gnorm))
    seconds = time.monotonic() - t0
    model.eval()
    if curve[-1]["step"] != step:  # stopped by the budget between two logged steps
        curve.append({"step": step, "tokens": step * tokens_per_step, "seconds": seconds, "lr": lr_at(step - 1, total, a),
                      "train_loss": float(acc) / acc_n, "val_loss": None})
    if curve[-1]["val_loss"] is None:
        curve[-1]["val_loss"], _ = val_loss(model, val_stream, a.seq, a.batch, limit=a.val_windows)
    summary = {"steps": step, "planned_steps": total, "stopped_by": stop, "seconds": seconds,
               "tokens": step * tokens_per_step, "tokens_per_second": step * tokens_per_step / seconds}
    print("trained %d steps (%s) in %.0f s: %.2f M tokens, %.0f tokens/s" % (
        step, "time budget" if stop == "time" else "all planned", seconds, summary["tokens"] / 1e6, summary["tokens_per_second"]))
    return curve, summary


@torch.no_grad()
def expert_balance(model, counter, stream, a):
    """Per MoE layer, the busiest expert's load over the mean on val windows, with the trained
    expert_bias and with it set to zero: what the balancing did."""
    out = {}
    for label in ("with expert_bias", "without"):
        saved = [block.expert_bias.clone() for _, block in counter.blocks]
        if label == "without":
            for _, block in counter.blocks:
                block.expert_bias.zero_()
        counter.counts.zero_()
        counter.active = True
        val_loss(model, stream, a.seq, a.batch, limit=a.val_windows, autocast=False)
        counter.active = False
        for (_, block), s in zip(counter.blocks, saved):
            block.expert_bias.copy_(s)
        c = counter.counts
        out[label] = (c.max(dim=1).values / c.mean(dim=1)).tolist()
    counter.counts.zero_()
    return out


def check_layout(path, cfg):
    """Makes model.safetensors hold the experts one by one, feed_forward.experts.N.w1/w3/w2.weight,
    as LFM2's checkpoints and gpulab's loader have them: if this transformers saved them fused
    (experts.gate_up_proj [E, 2*I, H], experts.down_proj [E, H, I]), they are split here (gate_up's
    first I rows are w1, the gate; the next I rows w3, the up projection). Returns the names."""
    with safe_open(path, framework="pt") as f:
        tensors = {k: f.get_tensor(k) for k in f.keys()}
        meta = f.metadata() or {"format": "pt"}
    fused = sorted(k for k in tensors if k.endswith(("experts.gate_up_proj", "experts.down_proj")))
    if fused:
        inter = cfg.moe_intermediate_size
        for k in fused:
            prefix, t = k.rsplit(".", 1)[0], tensors.pop(k)
            for e in range(t.shape[0]):
                if k.endswith("gate_up_proj"):
                    tensors["%s.%d.w1.weight" % (prefix, e)] = t[e, :inter].contiguous()
                    tensors["%s.%d.w3.weight" % (prefix, e)] = t[e, inter:].contiguous()
                else:
                    tensors["%s.%d.w2.weight" % (prefix, e)] = t[e].contiguous()
        save_file(tensors, path, metadata=meta)
        print("split %d fused expert tensors into the per-expert layout" % len(fused))
    want = {"model.layers.%d.feed_forward.experts.%d.%s.weight" % (l, e, w)
            for l in range(cfg.num_dense_layers, cfg.num_hidden_layers) for e in range(cfg.num_experts) for w in ("w1", "w2", "w3")}
    missing = sorted(want - set(tensors))
    if missing or "lm_head.weight" in tensors:
        raise RuntimeError("%s: %d expert tensors missing (%s...), lm_head stored %s" % (
            path, len(missing), missing[:3], "lm_head.weight" in tensors))
    dtypes = sorted({str(t.dtype) for t in tensors.values()})
    if dtypes != ["torch.bfloat16"]:
        raise RuntimeError("%s: dtypes %s, want bf16 only" % (path, dtypes))
    return sorted(tensors)


def param_counts(model, cfg):
    """All parameters (the tied embedding once), and those one token uses: all but the
    experts it is not routed to."""
    total = sum(p.numel() for p in model.parameters())
    per_expert = 3 * cfg.hidden_size * cfg.moe_intermediate_size
    idle = (cfg.num_hidden_layers - cfg.num_dense_layers) * (cfg.num_experts - cfg.num_experts_per_tok) * per_expert
    return total, total - idle


def samples(model, tok, device):
    """Greedy and sampled completions of PROMPTS by the stored model (fp32), for the card."""
    out = []
    eos = tok.token_to_id(gocorpus.EOS)
    for i, prompt in enumerate(PROMPTS):
        ids = torch.tensor([tok.encode(prompt).ids], device=device)
        for mode in ("greedy", "sampled"):
            kw = {"do_sample": False} if mode == "greedy" else {"do_sample": True, "temperature": 0.8, "top_p": 0.95}
            torch.manual_seed(i)
            with torch.no_grad():
                gen = model.generate(ids, max_new_tokens=160, eos_token_id=eos, pad_token_id=0, **kw)
            out.append({"prompt": prompt, "mode": mode, "text": prompt + tok.decode(gen[0, ids.shape[1]:].tolist(), skip_special_tokens=True)})
    return out


def write_card(out, info, curve, balance, samples_):
    """README.md: the model card."""
    c = info["config"]
    pct = lambda xs: ", ".join("%.2f" % x for x in xs)
    val = [r for r in curve if r["val_loss"] is not None]
    lines = [
        "---", "license: bsd-3-clause", "library_name: transformers", "pipeline_tag: text-generation",
        "tags: [lfm2_moe, go, code, tiny, gpulab]", "---", "",
        "# %s" % gocorpus.NAME, "",
        "A tiny LFM2-MoE (transformers' `Lfm2MoeForCausalLM`) that writes Go, trained from scratch in %.0f s on one %s "
        "for gpulab's notebook 06. It keeps every feature of LiquidAI's LFM2-8B-A1B at %.1f M parameters: short-convolution "
        "and attention layers (`layer_types`), grouped-query attention with RMSNorm on each head's queries and keys, "
        "dense feed-forwards in the first layers and a sigmoid-routed mixture of experts with `expert_bias` after them, "
        "and tied embeddings." % (info["training"]["seconds"], info["device"], info["params"]["total"] / 1e6), "",
        "## Model", "",
        "| | |", "|---|---|",
        "| parameters | %s in all, %s used per token (%d of %d experts per MoE layer) |" % (
            "{:,}".format(info["params"]["total"]), "{:,}".format(info["params"]["active"]), c["num_experts_per_tok"], c["num_experts"]),
        "| layers | %d: %s; layers 0-%d dense (width %d), the rest MoE (%d experts of width %d, top-%d) |" % (
            c["num_hidden_layers"], " ".join("A" if t == "full_attention" else "C" for t in c["layer_types"]),
            c["num_dense_layers"] - 1, c["intermediate_size"], c["num_experts"], c["moe_intermediate_size"], c["num_experts_per_tok"]),
        "| hidden, heads | %d; %d query heads and %d KV heads of %d; RoPE θ %g; conv kernel %d |" % (
            c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["hidden_size"] // c["num_attention_heads"],
            info["rope_theta"], c["conv_L_cache"]),
        "| context | %d tokens (`max_position_embeddings`, the training window) |" % c["max_position_embeddings"],
        "| vocabulary | %d: byte-level BPE trained on the training split with HF tokenizers; `<|startoftext|>` starts a file, `<|endoftext|>` ends it |" % c["vocab_size"],
        "| storage | bf16, `model.safetensors` %.1f MB |" % (info["bytes"]["model.safetensors"] / 1e6), "",
        "## Corpus", "",
        "The `.go` files of the Go %s distribution's `src/` that people wrote (no testdata, vendored or generated "
        "files; scripts/train/corpus.sh in gpulab). Whole packages are held out for validation: about 5%%, chosen by a "
        "hash of the import path, listed in `corpus.txt`." % info["corpus"]["go"], "",
        "| split | files | bytes | tokens |", "|---|---:|---:|---:|",
        "| train | %d | %s | %s |" % (info["corpus"]["train_files"], "{:,}".format(info["corpus"]["train_bytes"]), "{:,}".format(info["corpus"]["train_tokens"])),
        "| validation | %d | %s | %s |" % (info["corpus"]["val_files"], "{:,}".format(info["corpus"]["val_bytes"]), "{:,}".format(info["corpus"]["val_tokens"])), "",
        "Licence: the Go source is under the BSD-style licence in `LICENSE` (Go's own); this model, derived from it, "
        "is shipped under the same terms.", "",
        "## Training", "",
        "scripts/train/train_lfm2.py in gpulab, seed %d, on %s (torch %s, transformers %s, tokenizers %s):" % (
            info["args"]["seed"], info["device"], info["versions"]["torch"], info["versions"]["transformers"], info["versions"]["tokenizers"]), "",
        "- %d steps of %d windows of %d tokens (%.1f M tokens, %.1f passes over the training split) in %.0f s, %.0f tokens/s; %s." % (
            info["training"]["steps"], info["args"]["batch"], info["args"]["seq"], info["training"]["tokens"] / 1e6,
            info["training"]["tokens"] / info["corpus"]["train_tokens"], info["training"]["seconds"], info["training"]["tokens_per_second"],
            "the time budget stopped it before the planned %s" % info["training"]["planned_steps"] if info["training"]["stopped_by"] == "time"
            else "the step count was fixed by timing the first %d steps against the %.0f s budget; `--steps %d` repeats the schedule" % (
                CALIBRATION[1], info["budget_s"], info["training"]["steps"]) if info["args"]["steps"] == 0
            else "the step count was given (`--steps %d`)" % info["training"]["steps"]),
        "- AdamW (β 0.9, 0.95; weight decay %g on matrices), learning rate %g after %d warmup steps, cosine down to %g×; gradient norm clipped at %g; bf16 autocast over fp32 weights." % (
            info["args"]["weight_decay"], info["args"]["lr"], info["args"]["warmup"], info["args"]["min_lr"], info["args"]["clip"]),
        "- `expert_bias`: transformers keeps it as a buffer that no gradient reaches (the top-k choice is not differentiable). "
        "After every step each MoE layer's biases moved by %g towards balance, `b_i += %g · sign(mean load − load_i)`, the "
        "auxiliary-loss-free balancing of DeepSeek-V3 (Wang et al., 2024), with the load counted from the experts the router "
        "chose in that step. The biases end in [%s] by layer (min, max)." % (
            info["args"]["bias_rate"], info["args"]["bias_rate"], "; ".join("%.3f, %.3f" % mm for mm in info["bias_range"])),
        "- The loss curve is `loss_curve.csv` (the training loss averaged over %d steps; the validation loss on %d windows)." % (
            info["args"]["log_every"], info["args"]["val_windows"]), "",
        "| busiest expert ÷ mean load on validation, by MoE layer | |", "|---|---|",
        "| with the trained `expert_bias` | %s |" % pct(balance["with expert_bias"]),
        "| with `expert_bias` set to zero | %s |" % pct(balance["without"]), "",
        "## Validation", "",
        "The stored (bf16) weights, computed in fp32, on all %s tokens of the validation packages: loss **%.4f** nats per token, "
        "perplexity **%.2f**, %.3f bits per byte of source. At the last evaluation during training (fp32 weights, bf16 "
        "autocast, %d windows): %.4f." % ("{:,}".format(info["val"]["tokens"]), info["val"]["loss"], math.exp(info["val"]["loss"]),
                                           info["val"]["bits_per_byte"], info["args"]["val_windows"], val[-1]["val_loss"]), "",
        "## Samples", "",
        "The stored model in fp32 (transformers' `generate`, at most 160 new tokens, stopping at `<|endoftext|>`); sampled "
        "with temperature 0.8 and top-p 0.95.", ""]
    for s in samples_:
        lines += ["%s, prompt `%s`:" % (s["mode"].capitalize(), s["prompt"].replace("\n", "\\n")), "", "```go", s["text"].rstrip("\n"), "```", ""]
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write("\n".join(lines))


def write_curve(path, curve):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["step", "tokens", "seconds", "lr", "train_loss", "val_loss"])
        for r in curve:
            w.writerow([r["step"], r["tokens"], "%.2f" % r["seconds"], "%.6g" % r["lr"],
                        "" if r["train_loss"] is None else "%.5f" % r["train_loss"],
                        "" if r["val_loss"] is None else "%.5f" % r["val_loss"]])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True, help="the corpus tar.xz of scripts/train/corpus.sh")
    p.add_argument("--out", required=True, help="the model directory to write")
    p.add_argument("--time-budget", type=float, default=420, help="seconds of training at most (default 420: 7 minutes)")
    p.add_argument("--deadline", type=float, default=0, help="a Unix time: training stops --reserve seconds before it")
    p.add_argument("--reserve", type=float, default=90, help="seconds kept after training before --deadline")
    p.add_argument("--steps", type=int, default=0, help="training steps (0: as many as fit the budget, timed)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--seq", type=int, default=1024, help="tokens per training window, and the model's context")
    p.add_argument("--batch", type=int, default=32, help="windows per step")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--min-lr", type=float, default=0.1, help="the final learning rate, as a fraction of --lr")
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--bias-rate", type=float, default=1e-3, help="expert_bias update per step (DeepSeek-V3's gamma)")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--eval-every", type=int, default=0, help="steps between validation losses (0: about 20 in the run)")
    p.add_argument("--val-windows", type=int, default=64, help="validation windows per evaluation during training")
    a = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("train_lfm2.py needs a CUDA GPU")
    if a.steps == 0 and a.warmup < CALIBRATION[1]:
        sys.exit("--warmup %d: with --steps 0 the warmup must cover the %d calibration steps" % (a.warmup, CALIBRATION[1]))
    start = time.time()
    random.seed(a.seed)
    np.random.seed(a.seed)
    torch.manual_seed(a.seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = False
    torch.backends.cuda.matmul.allow_tf32 = True  # training only; the final evaluation is in true fp32
    torch.backends.cudnn.allow_tf32 = True
    device = torch.device("cuda")
    versions = {"torch": torch.__version__, "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
                "python": platform.python_version()}
    print("%s; %s" % (torch.cuda.get_device_name(), ", ".join("%s %s" % kv for kv in versions.items())))

    corpus = gocorpus.read_corpus(a.corpus)
    train_texts, val_texts = [t for _, t in corpus["train"]], [t for _, t in corpus["val"]]
    t = time.time()
    tok = gocorpus.train_tokenizer(train_texts, VOCAB)
    if tok.get_vocab_size() != VOCAB:
        sys.exit("the tokenizer has %d ids, want %d" % (tok.get_vocab_size(), VOCAB))
    train_ids, _ = gocorpus.token_stream(tok, train_texts)
    val_ids, _ = gocorpus.token_stream(tok, val_texts)
    for text in val_texts[:20]:
        if tok.decode(tok.encode(text, add_special_tokens=False).ids, skip_special_tokens=False) != text:
            sys.exit("the tokenizer does not round-trip a validation file")
    train_bytes, val_bytes = sum(len(s.encode()) for s in train_texts), sum(len(s.encode()) for s in val_texts)
    print("tokenizer and streams in %.1f s: train %d files, %.1f MB, %d tokens (%.2f bytes/token); val %d files, %d tokens" % (
        time.time() - t, len(train_texts), train_bytes / 1e6, len(train_ids), train_bytes / len(train_ids), len(val_texts), len(val_ids)))

    cfg = model_config(a.seq)
    model = transformers.Lfm2MoeForCausalLM._from_config(cfg, attn_implementation="sdpa", dtype=torch.float32).to(device)
    experts_impl = eager_experts(model)
    if cfg.rope_parameters["rope_theta"] != 1e6:
        sys.exit("rope_parameters %s: want rope_theta 1e6" % cfg.rope_parameters)
    total, active = param_counts(model, cfg)
    print("model: %d parameters, %d per token; attention %s, experts %s" % (total, active, model.config._attn_implementation, experts_impl))
    if total > MAX_PARAMS:
        sys.exit("%d parameters: more than %d" % (total, MAX_PARAMS))
    if model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr():
        sys.exit("the LM head is not tied to the embedding")
    for name, prm in model.named_parameters():
        if not torch.isfinite(prm).all() or (prm.dim() >= 2 and float(prm.std()) == 0):
            sys.exit("parameter %s is not initialized (std %g)" % (name, float(prm.std())))
    counter = ExpertCounter(model, cfg.num_experts)
    if len(counter.blocks) != cfg.num_hidden_layers - cfg.num_dense_layers or any(not hasattr(b, "expert_bias") for _, b in counter.blocks):
        sys.exit("found %d MoE blocks with expert_bias, want %d" % (len(counter.blocks), cfg.num_hidden_layers - cfg.num_dense_layers))

    train_stream = torch.from_numpy(train_ids).to(device)
    val_stream = torch.from_numpy(val_ids).to(device)
    # A first check that the router reports its choices: every token to k experts, in every MoE layer.
    counter.active = True
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        model(input_ids=windows(train_stream, torch.zeros(2, dtype=torch.long, device=device), 63)[:, :-1], use_cache=False)
    counter.active = False
    if not torch.all(counter.counts.sum(dim=1) == 2 * 63 * cfg.num_experts_per_tok):
        sys.exit("the expert counter saw %s assignments per layer, want %d" % (counter.counts.sum(dim=1).tolist(), 2 * 63 * cfg.num_experts_per_tok))
    counter.counts.zero_()

    budget = a.time_budget
    if a.deadline:
        budget = min(budget, a.deadline - a.reserve - time.time())
    if budget < 60:
        sys.exit("only %.0f s left for training before the deadline" % budget)
    print("training for at most %.0f s" % budget)
    curve, summary = train(model, counter, train_stream, val_stream, a, budget)

    # The stored model: bf16. Everything below measures it, in fp32.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    # Only the weights and expert_bias are rounded: the RoPE frequencies (a buffer that is not saved)
    # stay as transformers computes them when it loads the model.
    model.eval()
    with torch.no_grad():
        for prm in model.parameters():
            prm.copy_(prm.to(torch.bfloat16))
        for _, block in counter.blocks:
            block.expert_bias.copy_(block.expert_bias.to(torch.bfloat16))
    balance = expert_balance(model, counter, val_stream, a)
    counter.remove()
    bias_range = [(float(b.expert_bias.min()), float(b.expert_bias.max())) for _, b in counter.blocks]
    t = time.time()
    vloss, vtokens = val_loss(model, val_stream, a.seq, a.batch, autocast=False)
    print("validation of the stored model (fp32, all of val): loss %.4f, perplexity %.2f, in %.1f s" % (vloss, math.exp(vloss), time.time() - t))
    samples_ = samples(model, tok, device)

    out = a.out
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    model.generation_config = transformers.GenerationConfig(bos_token_id=1, eos_token_id=2, pad_token_id=0)
    model.to(torch.bfloat16).save_pretrained(out, safe_serialization=True)
    model.generation_config.save_pretrained(out)
    check_layout(os.path.join(out, "model.safetensors"), cfg)
    tok.save(os.path.join(out, "tokenizer.json"))
    with open(os.path.join(out, "tokenizer.json")) as f:
        gocorpus.check_tokenizer_json(json.load(f))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": gocorpus.BOS, "eos_token": gocorpus.EOS,
                   "pad_token": gocorpus.PAD, "add_bos_token": True, "model_max_length": a.seq}, f, indent=1)
    with open(os.path.join(out, "LICENSE"), "w") as f:
        f.write(corpus["LICENSE"])
    with open(os.path.join(out, "corpus.txt"), "w") as f:
        f.write(corpus["SOURCE"])
    write_curve(os.path.join(out, "loss_curve.csv"), curve)
    with open(os.path.join(out, "config.json")) as f:
        saved_cfg = json.load(f)
    if saved_cfg.get("dtype") != "bfloat16":  # the weights are bf16, whatever this version wrote
        print("config.json says dtype %r: set to bfloat16" % saved_cfg.get("dtype"))
        saved_cfg["dtype"] = "bfloat16"
        with open(os.path.join(out, "config.json"), "w") as f:
            json.dump(saved_cfg, f, indent=2, sort_keys=True)
    info = {
        "name": gocorpus.NAME, "device": torch.cuda.get_device_name(), "versions": versions, "args": vars(a),
        "budget_s": budget, "experts_implementation": experts_impl, "config": saved_cfg, "rope_theta": 1e6,
        "params": {"total": total, "active": active},
        "corpus": {"go": corpus["SOURCE"].split()[1], "train_files": len(train_texts), "train_bytes": train_bytes,
                   "train_tokens": int(len(train_ids)), "val_files": len(val_texts), "val_bytes": val_bytes, "val_tokens": int(len(val_ids))},
        "training": summary,
        "val": {"loss": vloss, "perplexity": math.exp(vloss), "tokens": vtokens,
                "bits_per_byte": vloss * vtokens / math.log(2) / val_bytes},
        "bias_range": bias_range, "balance": balance,
        "bytes": {name: os.path.getsize(os.path.join(out, name)) for name in sorted(os.listdir(out))},
        "wall_seconds": time.time() - start,
    }
    with open(os.path.join(out, "training.json"), "w") as f:
        json.dump(info, f, indent=1)
    write_card(out, info, curve, balance, samples_)
    print("wrote %s in %.0f s: %s" % (out, time.time() - start, ", ".join("%s %.1f MB" % (k, v / 1e6) for k, v in info["bytes"].items())))


if __name__ == "__main__":
    main()
