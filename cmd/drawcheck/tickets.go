package main

import (
	"slices"
	"sort"
)

// ticketSet is a sorted set of tickets that finds the k-th in about
// sqrt(n) steps: sorted blocks of at most blockMax, so a replay of a
// lottery of a million waiting stays fast without a balanced tree.
type ticketSet struct {
	blocks [][]int64
	n      int
}

const blockMax = 512

func (s *ticketSet) len() int { return s.n }

// block is the index of the first block whose last ticket is >= t
// (len(blocks) when none).
func (s *ticketSet) block(t int64) int {
	return sort.Search(len(s.blocks), func(i int) bool { b := s.blocks[i]; return b[len(b)-1] >= t })
}

func (s *ticketSet) has(t int64) bool {
	b := s.block(t)
	if b == len(s.blocks) {
		return false
	}
	_, ok := slices.BinarySearch(s.blocks[b], t)
	return ok
}

// insert adds t; false when it was there.
func (s *ticketSet) insert(t int64) bool {
	b := s.block(t)
	if b == len(s.blocks) {
		if b == 0 || len(s.blocks[b-1]) >= blockMax {
			s.blocks = append(s.blocks, []int64{t})
			s.n++
			return true
		}
		b--
	}
	i, ok := slices.BinarySearch(s.blocks[b], t)
	if ok {
		return false
	}
	s.blocks[b] = slices.Insert(s.blocks[b], i, t)
	s.n++
	if len(s.blocks[b]) > 2*blockMax {
		half := slices.Clone(s.blocks[b][blockMax:])
		s.blocks[b] = s.blocks[b][:blockMax:blockMax]
		s.blocks = slices.Insert(s.blocks, b+1, half)
	}
	return true
}

// remove takes t out; false when it was not there.
func (s *ticketSet) remove(t int64) bool {
	b := s.block(t)
	if b == len(s.blocks) {
		return false
	}
	i, ok := slices.BinarySearch(s.blocks[b], t)
	if !ok {
		return false
	}
	s.blocks[b] = slices.Delete(s.blocks[b], i, i+1)
	if len(s.blocks[b]) == 0 {
		s.blocks = slices.Delete(s.blocks, b, b+1)
	}
	s.n--
	return true
}

// at is the ticket at 0-based rank k (0 <= k < len).
func (s *ticketSet) at(k int) int64 {
	for _, b := range s.blocks {
		if k < len(b) {
			return b[k]
		}
		k -= len(b)
	}
	panic("ticketSet.at out of range")
}

// below counts the tickets under t.
func (s *ticketSet) below(t int64) int {
	c := 0
	for _, b := range s.blocks {
		if b[len(b)-1] < t {
			c += len(b)
			continue
		}
		i, _ := slices.BinarySearch(b, t)
		return c + i
	}
	return c
}

// inRange reports whether t lies in (after, upto], a nil bound being none.
func inRange(t int64, after, upto *int64) bool {
	return (after == nil || t > *after) && (upto == nil || t <= *upto)
}

// removeRange takes out every ticket in (after, upto].
func (s *ticketSet) removeRange(after, upto *int64) {
	from := 0
	if after != nil {
		from = s.block(*after + 1)
	}
	var gone []int64
	for _, b := range s.blocks[from:] {
		if upto != nil && b[0] > *upto {
			break
		}
		for _, t := range b {
			if inRange(t, after, upto) {
				gone = append(gone, t)
			}
		}
	}
	for _, t := range gone {
		s.remove(t)
	}
}
