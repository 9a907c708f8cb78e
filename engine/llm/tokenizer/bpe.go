package tokenizer

import (
	"container/heap"
	"fmt"
)

// bpe appends the ids of one pre-tokenized word to ids. The word starts as
// one symbol per byte; then, as long as some adjacent pair is in the merge
// list, the pair with the lowest rank is merged, the leftmost first if the
// pair occurs more than once.
//
// Scanning all pairs for each merge would cost O(n²) for an n-byte word,
// and a word can be long (a run of 100 000 letters is one word). So, as
// tokenizers does, the candidate pairs wait in a priority queue ordered by
// (rank, position) and the symbols form a linked list: each merge costs
// O(log n). A queued pair is stale once either symbol has changed; it is
// dropped when it comes up.
func (t *Tokenizer) bpe(ids []int, word string) ([]int, error) {
	chars := toByteLevel(word)
	if t.ignoreMerges {
		if id, ok := t.vocab[string(chars)]; ok {
			return append(ids, id), nil
		}
	}
	syms := make([]symbol, 0, len(chars))
	for i, c := range chars {
		id, ok := t.vocab[string(c)]
		switch {
		case ok:
		case t.unk < 0:
			return nil, fmt.Errorf("tokenizer: byte 0x%02x of %q has no token (%q is not in the vocab) and there is no unk_token", word[i], word, string(c))
		case t.fuseUnk && len(syms) > 0 && syms[len(syms)-1].id == t.unk:
			continue
		default:
			id = t.unk
		}
		syms = append(syms, symbol{id: id, prev: len(syms) - 1, next: len(syms) + 1})
	}
	if len(syms) == 0 {
		return ids, nil
	}
	syms[len(syms)-1].next = -1
	var queue pairQueue
	push := func(left int) {
		if left < 0 || syms[left].next < 0 {
			return
		}
		right := syms[left].next
		if m, ok := t.merges[[2]int{syms[left].id, syms[right].id}]; ok {
			heap.Push(&queue, pair{m, left, syms[left].id, syms[right].id})
		}
	}
	for i := range syms {
		push(i)
	}
	for queue.Len() > 0 {
		p := heap.Pop(&queue).(pair)
		left := &syms[p.pos]
		if left.id != p.leftID || left.next < 0 || syms[left.next].id != p.rightID {
			continue // stale: one of the two has been merged since
		}
		right := syms[left.next]
		syms[left.next].id = -1 // gone
		left.id, left.next = p.merge.id, right.next
		if right.next >= 0 {
			syms[right.next].prev = p.pos
		}
		push(left.prev)
		push(p.pos)
	}
	for i := 0; i >= 0; i = syms[i].next {
		ids = append(ids, syms[i].id)
	}
	return ids, nil
}

// symbol is one symbol of a word being merged: its id (-1 once merged into
// its left neighbour) and its neighbours' indices (-1 at the ends).
type symbol struct{ id, prev, next int }

// pair is a queued merge of the symbol at pos with its right neighbour,
// valid while their ids are still leftID and rightID.
type pair struct {
	merge
	pos, leftID, rightID int
}

// pairQueue is a min-heap of pairs by (rank, pos).
type pairQueue []pair

func (q pairQueue) Len() int { return len(q) }
func (q pairQueue) Less(i, j int) bool {
	return q[i].rank < q[j].rank || q[i].rank == q[j].rank && q[i].pos < q[j].pos
}
func (q pairQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *pairQueue) Push(x any)   { *q = append(*q, x.(pair)) }
func (q *pairQueue) Pop() any {
	old := *q
	p := old[len(old)-1]
	*q = old[:len(old)-1]
	return p
}
