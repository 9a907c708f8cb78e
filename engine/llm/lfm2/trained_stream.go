package lfm2

// Text in, text out, as it is generated: the prompt through the tokenizer,
// each new token back to text (tokenizer.Stream) as soon as the engine
// picks it, timed.

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"gpulab/engine/llm/tokenizer"
)

// Generator is what StreamText needs of an engine: GenerateBatch on its
// device. *CPUModel and *CUDAModel have it.
type Generator interface {
	Generate(prompts [][]int, n int, s Sampling, emit func(step int, toks []int) error) error
}

// TextRun is one streamed generation.
type TextRun struct {
	Prompt    string
	PromptIDs []int  // the prompt's ids, with the template's special tokens
	IDs       []int  // the generated ids, without the special token that ended the run
	Text      string // the text of IDs
	// StoppedBy is the special token (such as <|endoftext|>, where a file
	// ends) that ended the run before its n tokens, or -1.
	StoppedBy int
	Prefill   time.Duration // from the call to the first new token: the prompt's forward
	Decode    time.Duration // from the first new token to the last, one forward each
}

// errStopText ends a generation at a special token.
var errStopText = errors.New("lfm2: special token")

// StreamText encodes prompt (with the tokenizer's special tokens, e.g.
// <|startoftext|> in front), generates up to n tokens after it on g with s,
// and writes their text to w as each is picked (w may be nil). A character
// split across tokens is written once its last byte comes. The run ends
// early at a special token, which is not written.
func StreamText(g Generator, tok *tokenizer.Tokenizer, prompt string, n int, s Sampling, w io.Writer) (*TextRun, error) {
	if n < 1 {
		return nil, fmt.Errorf("lfm2: streaming %d tokens: want at least 1", n)
	}
	if w == nil {
		w = io.Discard
	}
	ids, err := tok.Encode(prompt, true)
	if err != nil {
		return nil, fmt.Errorf("lfm2: %w", err)
	}
	r := &TextRun{Prompt: prompt, PromptIDs: ids, StoppedBy: -1}
	var text strings.Builder
	stream := tok.Stream()
	put := func(s string) error {
		text.WriteString(s)
		_, err := io.WriteString(w, s)
		return err
	}
	start := time.Now()
	var first time.Time
	err = g.Generate([][]int{ids}, n, s, func(step int, toks []int) error {
		if step == 0 {
			first = time.Now()
			r.Prefill = first.Sub(start)
		}
		r.Decode = time.Since(first)
		id := toks[0]
		if tok.IsSpecial(id) {
			r.StoppedBy = id
			return errStopText
		}
		r.IDs = append(r.IDs, id)
		piece, err := stream.Next(id)
		if err != nil {
			return err
		}
		return put(piece)
	})
	if err != nil && !errors.Is(err, errStopText) {
		return nil, err
	}
	if err := put(stream.Flush()); err != nil {
		return nil, err
	}
	r.Text = text.String()
	return r, nil
}

// WarmUp runs prompt through g and generates two tokens, discarded: the
// first launches of a fresh engine (module loads, allocations, cuBLAS
// handles) then do not land in the timed prefill of the StreamText that
// follows.
func WarmUp(g Generator, tok *tokenizer.Tokenizer, prompt string) error {
	ids, err := tok.Encode(prompt, true)
	if err != nil {
		return fmt.Errorf("lfm2: %w", err)
	}
	return g.Generate([][]int{ids}, 2, Sampling{}, func(int, []int) error { return nil })
}

// DTypeRatesMarkdown sets the warm fp32 and bf16 runs of one prompt side
// by side: each one's prefill and decode rates, and which decodes faster,
// with what that says where bf16 is not faster (level within 5%).
func DTypeRatesMarkdown(f32, bf16 *TextRun) string {
	s := fmt.Sprintf("Warmed up, the %d-token prompt prefills in %v in fp32 and %v in bf16, and decoding runs at %.0f tokens/s in fp32 and %.0f in bf16",
		len(f32.PromptIDs), f32.Prefill.Round(10*time.Microsecond), bf16.Prefill.Round(10*time.Microsecond), f32.DecodeTokensPerSec(), bf16.DecodeTokensPerSec())
	switch r := bf16.DecodeTokensPerSec() / f32.DecodeTokensPerSec(); {
	case r > 1.05:
		s += fmt.Sprintf(": bf16 decodes %.2f× as fast, as half the bytes of weights to read would make a bandwidth-bound step.", r)
	case r >= 0.95:
		s += ": level (within 5%). bf16 halves the bytes of the weights, but a step of this small model reads few of them, so their bytes do not bound it."
	default:
		s += fmt.Sprintf(": bf16 decodes at %.2f× fp32's rate, slower though it reads half the bytes. A step of this small model reads few weights, so their bytes do not bound it, and the saving cannot show; what the bf16 kernels cost instead, this run does not say (`lab lfm2 bench` profiles a step by operation).", r)
	}
	return s + "\n"
}

// Steps is the number of tokens the engine picked: the generated ones and
// the special token that ended the run, if one did.
func (r *TextRun) Steps() int {
	if r.StoppedBy >= 0 {
		return len(r.IDs) + 1
	}
	return len(r.IDs)
}

// PrefillTokensPerSec is the prompt's tokens per second of Prefill.
func (r *TextRun) PrefillTokensPerSec() float64 { return PerSecond(len(r.PromptIDs), r.Prefill) }

// DecodeTokensPerSec is the tokens after the first per second of Decode:
// the rate of the one-token steps.
func (r *TextRun) DecodeTokensPerSec() float64 { return PerSecond(r.Steps()-1, r.Decode) }

func (r *TextRun) String() string {
	end := fmt.Sprintf("ran its %d tokens", r.Steps())
	if r.StoppedBy >= 0 {
		end = fmt.Sprintf("stopped at special token %d after %d tokens", r.StoppedBy, len(r.IDs))
	}
	return fmt.Sprintf("prompt %d tokens, prefill %v (%.0f tokens/s); decode %.0f tokens/s; %s",
		len(r.PromptIDs), r.Prefill.Round(time.Microsecond), r.PrefillTokensPerSec(), r.DecodeTokensPerSec(), end)
}
