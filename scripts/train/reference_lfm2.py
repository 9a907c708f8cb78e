#!/usr/bin/env python3
"""Writes the references that gpulab's Go tests check the trained LFM2-MoE against, from transformers.

    python3 scripts/train/reference_lfm2.py --model DIR --corpus .build/train/go-corpus.tar.xz

DIR is train_lfm2.py's model directory. Everything is computed from the stored (bf16) weights,
with eager attention and transformers' own expert loop, and written to DIR/reference/:

    ids.json        {"batch": [[...], ...]}: 3 held-out windows of 64 tokens, from the middle of
                    validation files (scripts/train/corpus.sh holds out whole packages)
    logits.npy      float32 [3, 64, vocab]: transformers' fp32 logits of ids.json, on the CPU
    greedy.json     {"cases": [{"text", "prompt", "continuation", "min_margin"}]}: at least 3 prompts
                    (the first is notebook 06's "func main() {" where it qualifies), each with 64 greedy
                    tokens by fp32 re-forwards on the CPU, no stop at <|endoftext|>; min_margin is the
                    smallest gap between the top two logits over the 64 steps, and a prompt qualifies
                    when it is at least MIN_MARGIN, far above the 1e-4 the Go reference may differ by
    encodings.json  [{"text", "ids"}]: the prompts, snippets and the start of validation files, with
                    HF tokenizers' ids (with <|startoftext|>): engine/llm/tokenizer must give the same
    heldout.json    {"batch": [[...]], "hf_fp32_top1": [[...]]}: 80 windows of 256 validation tokens
                    (20 480 positions) and transformers' fp32 top token at each, for the GPU checks
    agreement.json  transformers' bf16 against its fp32 on heldout.json, top token by top token
                    (on the GPU where there is one), with the fp32 top-two margins

It then appends a "Checks" section to DIR/README.md and fails if DIR holds more than 30 MB.
"""
import argparse
import json
import os
import platform
import sys
import time

import numpy as np
import torch
import transformers
from tokenizers import Tokenizer

import gocorpus

CI_SEQS, CI_LEN = 3, 64
GREEDY_TOKENS, MIN_MARGIN, MAX_CASES = 64, 1e-3, 4
HELDOUT_SEQS, HELDOUT_LEN = 80, 256
MAX_BYTES = 30_000_000
PROMPTS = [
    "func main() {",
    "package main\n\nimport (\n",
    "func (b *Buffer) Len() int {",
    "// Copyright 2009 The Go Authors. All rights reserved.\n// Use of this source code is governed by a BSD-style\n"
    "// license that can be found in the LICENSE file.\n\n",
    "\tfor i := 0; i < len(s); i++ {",
    "if err != nil {",
]
SNIPPETS = [
    "\t\tx := `raw\nstring`\n\ty := \"tab\\there\"\n",
    "// héllo, 世界 🚀 — naïve café\n",
    "const big = 1234567890 + 0x7fff_ffff + 1e-9\n",
    "line one\r\nline two\r\n\n\n\ttabbed   spaces  \n",
    "<|startoftext|>package p<|endoftext|>",
]


def load(model_dir, dtype, device):
    """The stored model in dtype on device, eager attention and transformers' own expert loop."""
    m = transformers.Lfm2MoeForCausalLM.from_pretrained(model_dir, dtype=dtype, attn_implementation="eager")
    if hasattr(m, "set_experts_implementation"):
        m.set_experts_implementation("eager")
    return m.to(device).eval()


@torch.no_grad()
def greedy(model, prompt, n):
    """n greedy tokens after prompt by a full re-forward each step, and the smallest top-two gap."""
    ids, margins = list(prompt), []
    for _ in range(n):
        last = model(torch.tensor([ids]), use_cache=False).logits[0, -1].double()
        top = torch.topk(last, 2)
        margins.append(float(top.values[0] - top.values[1]))
        ids.append(int(top.indices[0]))
    return ids[len(prompt):], min(margins)


def middle_windows(tok, texts, count, length):
    """count windows of length ids, each from the middle of a validation file long enough, the files
    spread over the split."""
    out = []
    long_enough = [t for t in texts if len(tok.encode(t, add_special_tokens=False).ids) >= 2 * length]
    for i in range(count):
        ids = tok.encode(long_enough[i * len(long_enough) // count], add_special_tokens=False).ids
        mid = (len(ids) - length) // 2
        out.append(ids[mid:mid + length])
    return out


@torch.no_grad()
def top1(model, batch, device, chunk=16):
    """The top token at every position of batch, and the top-two margins (float32)."""
    tops, margins = [], []
    for i in range(0, len(batch), chunk):
        logits = model(torch.tensor(batch[i:i + chunk], device=device), use_cache=False).logits.float()
        v = torch.topk(logits, 2, dim=-1).values
        tops.append(logits.argmax(-1).cpu())
        margins.append((v[..., 0] - v[..., 1]).cpu())
    return torch.cat(tops).numpy(), torch.cat(margins).numpy()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="the model directory train_lfm2.py wrote")
    p.add_argument("--corpus", required=True, help="the corpus tar.xz of scripts/train/corpus.sh")
    a = p.parse_args()
    start = time.time()
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32, on the GPU too
    torch.backends.cudnn.allow_tf32 = False
    torch.set_num_threads(os.cpu_count() or 1)
    ref = os.path.join(a.model, "reference")
    os.makedirs(ref, exist_ok=True)
    tok = Tokenizer.from_file(os.path.join(a.model, "tokenizer.json"))
    gocorpus.check_ids(tok)
    val = [t for _, t in gocorpus.read_corpus(a.corpus)["val"]]
    print("transformers %s, torch %s; %d validation files" % (transformers.__version__, torch.__version__, len(val)))

    # The CI references: small, on the CPU in fp32.
    cpu = load(a.model, torch.float32, "cpu")
    batch = middle_windows(tok, val, CI_SEQS, CI_LEN)
    with torch.no_grad():
        logits = cpu(torch.tensor(batch), use_cache=False).logits.float().numpy()
    np.save(os.path.join(ref, "logits.npy"), logits.astype(np.float32))
    with open(os.path.join(ref, "ids.json"), "w") as f:
        json.dump({"batch": batch}, f)
    print("logits %s of held-out windows" % (logits.shape,))

    cases, weak = [], []
    for text in PROMPTS:
        prompt = tok.encode(text).ids
        cont, margin = greedy(cpu, prompt, GREEDY_TOKENS)
        case = {"text": text, "prompt": prompt, "continuation": cont, "min_margin": margin}
        (cases if margin >= MIN_MARGIN else weak).append(case)
        print("greedy %r: min margin %.3g%s" % (text, margin, "" if margin >= MIN_MARGIN else " (below %g: left out)" % MIN_MARGIN))
    if len(cases) < 3:
        weak.sort(key=lambda c: -c["min_margin"])
        print("WARNING: only %d prompts have a top-two margin of at least %g; adding the %d best of the others"
              % (len(cases), MIN_MARGIN, 3 - len(cases)))
        cases += weak[:3 - len(cases)]
    cases = cases[:MAX_CASES]
    with open(os.path.join(ref, "greedy.json"), "w") as f:
        json.dump({"cases": cases}, f, indent=1)

    texts = PROMPTS + SNIPPETS
    for i in range(8):  # the start of validation files, cut at a line end
        t = val[i * len(val) // 8]
        texts.append(t[:t.rfind("\n", 0, 2000) + 1] or t[:2000])
    enc = [{"text": t, "ids": tok.encode(t).ids} for t in texts]
    for e in enc:
        if tok.decode(e["ids"][1:], skip_special_tokens=False) != e["text"]:
            sys.exit("HF tokenizers does not round-trip %r" % e["text"][:60])
    with open(os.path.join(ref, "encodings.json"), "w") as f:
        json.dump(enc, f, ensure_ascii=False, indent=1)
    del cpu

    # The GPU checks' data: 20 480 held-out positions, and transformers' own bf16 against its fp32.
    device = "cuda" if torch.cuda.is_available() else "cpu"
    stream, _ = gocorpus.token_stream(tok, val)
    gap = (len(stream) - HELDOUT_LEN) // HELDOUT_SEQS
    held = [stream[i * gap:i * gap + HELDOUT_LEN].tolist() for i in range(HELDOUT_SEQS)]
    f32 = load(a.model, torch.float32, device)
    top32, margin = top1(f32, held, device)
    del f32
    bf16 = load(a.model, torch.bfloat16, device)
    top16, _ = top1(bf16, held, device)
    del bf16
    agree = float((top32 == top16).mean())
    with open(os.path.join(ref, "heldout.json"), "w") as f:
        json.dump({"batch": held, "hf_fp32_top1": top32.tolist()}, f)
    result = {
        "positions": int(top32.size), "hf_bf16_vs_hf_fp32_top1": agree,
        "fp32_top2_margin_quantiles_1_5_50": [float(q) for q in np.quantile(margin, [0.01, 0.05, 0.5])],
        "fp32_share_margin_below": {str(t): float((margin < t).mean()) for t in (0.01, 0.05, 0.1, 0.25)},
        "bf16_disagreements_margin_median": float(np.median(margin[top32 != top16])) if agree < 1 else None,
        "device": torch.cuda.get_device_name() if device == "cuda" else platform.processor() or "cpu",
        "attention": "eager", "experts": "eager (transformers' loop)", "tf32": False,
        "transformers": transformers.__version__, "torch": torch.__version__,
    }
    with open(os.path.join(ref, "agreement.json"), "w") as f:
        json.dump(result, f, indent=1)
    print("held-out %d positions: HF bf16 agrees with HF fp32 on the top token at %.2f%% (%s)" % (
        result["positions"], 100 * agree, result["device"]))

    # The card's last section, replaced on a rerun.
    card = os.path.join(a.model, "README.md")
    with open(card) as f:
        text = f.read().split("\n## Checks\n")[0].rstrip("\n")
    files = sum(os.path.getsize(os.path.join(r, n)) for r, _, fs in os.walk(a.model) for n in fs if n != "README.md")
    lines = ["", "", "## Checks", "",
             "`reference/` holds what gpulab's Go tests compare with (scripts/train/reference_lfm2.py, transformers %s, "
             "eager attention and expert loop, TF32 off):" % transformers.__version__, "",
             "- `ids.json`, `logits.npy`: %d held-out windows of %d tokens and transformers' fp32 logits (CPU): the Go CPU "
             "reference and the CUDA fp32 engine must agree within 1e-4." % (CI_SEQS, CI_LEN),
             "- `greedy.json`: %d greedy tokens after each of %d prompts (smallest top-two margin %.3g): the Go engines must "
             "give the same tokens." % (GREEDY_TOKENS, len(cases), min(c["min_margin"] for c in cases)),
             "- `encodings.json`: %d texts and HF tokenizers' ids, which gpulab's tokenizer must reproduce." % len(enc),
             "- `heldout.json`: %d windows of %d validation tokens (%d positions). On %s, transformers' bf16 picks the same top "
             "token as its fp32 at **%.2f%%** of them (`agreement.json`); the fp32 top-two margin is below 0.1 at %.2f%%." % (
                 HELDOUT_SEQS, HELDOUT_LEN, result["positions"], result["device"], 100 * agree,
                 100 * result["fp32_share_margin_below"]["0.1"]), "",
             "Greedy continuations (fp32):", ""]
    for c in cases:
        lines += ["```go", c["text"] + tok.decode(c["continuation"], skip_special_tokens=False), "```", ""]
    lines.append("The files besides this card hold %.1f MB." % (files / 1e6))
    with open(card, "w") as f:
        f.write(text + "\n".join(lines) + "\n")
    total = sum(os.path.getsize(os.path.join(r, n)) for r, _, fs in os.walk(a.model) for n in fs)
    print("references in %.0f s; %s holds %.1f MB" % (time.time() - start, a.model, total / 1e6))
    if total > MAX_BYTES:
        sys.exit("%s holds %.1f MB, more than %.0f MB: shrink the model" % (a.model, total / 1e6, MAX_BYTES / 1e6))


if __name__ == "__main__":
    main()
