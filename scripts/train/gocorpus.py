"""The Go-source corpus of scripts/train/corpus.sh and the tokenizer trained on it, shared by
train_lfm2.py and reference_lfm2.py.

The corpus is a tar.xz with SOURCE (the Go version, the file counts and the validation packages),
LICENSE (Go's BSD licence) and the .go files under train/ and val/, split by package. A file
becomes tokens as <|startoftext|> (the tokenizer's template), its text, then <|endoftext|>; the
files of a split, in name order, make one stream.
"""
import tarfile

import numpy as np
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

# The model directory's name: under datasets/models/ in the repository, and in the GPU run's output.
NAME = "lfm2-moe-tiny-go"

PAD, BOS, EOS = "<|pad|>", "<|startoftext|>", "<|endoftext|>"
SPECIAL = [PAD, BOS, EOS]  # ids 0, 1, 2: config.json's pad, bos and eos_token_id
# LFM2's pre-tokenizer pattern (Llama 3's), spelled exactly as engine/llm/tokenizer knows it
# (pretokenize.go, llama3Pattern): that package reads no other Split pattern.
SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
         r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def read_corpus(path):
    """Reads the corpus tar.xz at path: {"train": [(name, text)], "val": [...], "LICENSE": text,
    "SOURCE": text}, each split in name order. A file that is not valid UTF-8 is left out and
    named on the way (Go source is UTF-8, so none should be)."""
    out = {"train": [], "val": []}
    skipped = []
    with tarfile.open(path, "r:xz") as tar:
        for member in tar:
            if not member.isfile():
                continue
            data = tar.extractfile(member).read()
            name = member.name
            if name in ("SOURCE", "LICENSE"):
                out[name] = data.decode("utf-8")
                continue
            split = name.split("/", 1)[0]
            if split not in out or not name.endswith(".go"):
                raise ValueError("%s: unexpected member %r (want SOURCE, LICENSE, train/**.go, val/**.go)" % (path, name))
            try:
                out[split].append((name, data.decode("utf-8")))
            except UnicodeDecodeError as e:
                skipped.append("%s (%s)" % (name, e))
    for key in ("SOURCE", "LICENSE"):
        if key not in out:
            raise ValueError("%s has no %s: rebuild it with scripts/train/corpus.sh" % (path, key))
    for split in ("train", "val"):
        if not out[split]:
            raise ValueError("%s has no %s/ files" % (path, split))
        out[split].sort()
    if skipped:
        print("left out %d files that are not UTF-8: %s" % (len(skipped), "; ".join(skipped)))
    return out


def train_tokenizer(texts, vocab_size):
    """A byte-level BPE of vocab_size ids trained on texts, with the structure that
    engine/llm/tokenizer reads: the special tokens first, LFM2's Split pre-tokenizer then ByteLevel
    without its own regex, the ByteLevel decoder, and a template that puts <|startoftext|> first."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
    bos = tok.token_to_id(BOS)
    tok.post_processor = processors.TemplateProcessing(
        single=BOS + " $A", pair=BOS + " $A " + BOS + " $B", special_tokens=[(BOS, bos)])
    check_ids(tok)
    return tok


def check_ids(tok):
    """Fails unless the special tokens have the ids that config.json names."""
    for want, token in enumerate(SPECIAL):
        if tok.token_to_id(token) != want:
            raise ValueError("tokenizer: %s has id %s, want %d" % (token, tok.token_to_id(token), want))


def check_tokenizer_json(doc):
    """Fails, naming the part, unless the parsed tokenizer.json doc is what engine/llm/tokenizer
    loads: a fail-fast check on the GPU machine (the Go tests are the real one)."""
    pre = doc.get("pre_tokenizer") or {}
    steps = pre.get("pretokenizers") or []
    post = doc.get("post_processor") or {}
    model = doc.get("model") or {}
    problems = []
    if doc.get("truncation") is not None or doc.get("normalizer") is not None:
        problems.append("truncation and normalizer must be null")
    if pre.get("type") != "Sequence" or [s.get("type") for s in steps] != ["Split", "ByteLevel"]:
        problems.append("pre_tokenizer must be Sequence[Split, ByteLevel], is %s" % pre)
    else:
        split, byte_level = steps
        if split.get("pattern", {}).get("Regex") != SPLIT or split.get("behavior") != "Isolated" or split.get("invert"):
            problems.append("Split must be LFM2's pattern, Isolated, not inverted: %s" % split)
        if byte_level.get("use_regex") or byte_level.get("add_prefix_space"):
            problems.append("ByteLevel must have use_regex and add_prefix_space false: %s" % byte_level)
    single = post.get("single") or []
    if post.get("type") != "TemplateProcessing" or len(single) != 2 or \
            (single[0].get("SpecialToken") or {}).get("id") != BOS or (single[1].get("Sequence") or {}).get("id") != "A":
        problems.append("post_processor must be TemplateProcessing with single [%s, $A]: %s" % (BOS, post))
    if (doc.get("decoder") or {}).get("type") != "ByteLevel":
        problems.append("decoder must be ByteLevel")
    if model.get("type") != "BPE" or model.get("dropout") or model.get("unk_token") or model.get("byte_fallback") \
            or model.get("continuing_subword_prefix") or model.get("end_of_word_suffix"):
        problems.append("model must be a plain byte-level BPE: %s" % {k: v for k, v in model.items() if k not in ("vocab", "merges")})
    for a in doc.get("added_tokens") or []:
        if a.get("single_word") or a.get("lstrip") or a.get("rstrip"):
            problems.append("added token %s: single_word, lstrip and rstrip must be false" % a.get("content"))
    if problems:
        raise ValueError("tokenizer.json is not what engine/llm/tokenizer loads:\n  " + "\n  ".join(problems))


def token_stream(tok, texts):
    """The ids of texts as one int32 stream: for each text <|startoftext|>, its ids, <|endoftext|>."""
    encode = getattr(tok, "encode_batch_fast", tok.encode_batch)  # no offsets: faster where it exists
    eos = tok.token_to_id(EOS)
    parts = [np.asarray(e.ids + [eos], dtype=np.int32) for e in encode(list(texts), add_special_tokens=True)]
    return np.concatenate(parts), [len(p) for p in parts]
