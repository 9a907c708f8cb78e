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
