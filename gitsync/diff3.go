package gitsync

import (
	"slices"
	"sort"
	"strings"
)

// maxLCSCells bounds the LCS table of one diff. Notes are small; a pair of
// huge bodies degrades to "conflict", which keeps both texts.
const maxLCSCells = 4_000_000

// Merge3 merges two edits of base line by line. clean is false when both
// sides changed the same region differently; merged then holds ours in
// that region (callers keep theirs separately). Lines keep their "\n".
func Merge3(base, ours, theirs string) (merged string, clean bool) {
	o, a, b := splitLines(base), splitLines(ours), splitLines(theirs)
	hs := append(hunks(o, a, 0), hunks(o, b, 1)...)
	sort.SliceStable(hs, func(i, j int) bool {
		if hs[i].oStart != hs[j].oStart {
			return hs[i].oStart < hs[j].oStart
		}
		return hs[i].side < hs[j].side
	})
	var out []string
	clean = true
	oPos := 0
	for i := 0; i < len(hs); {
		rs, re, j := hs[i].oStart, hs[i].oEnd, i+1
		// Overlapping hunks form one region, and so do an insertion and
		// anything else at the same point (their order would be a guess).
		// Edits of merely adjacent lines stay apart and merge cleanly.
		for j < len(hs) && (hs[j].oStart < re || hs[j].oStart == re && (hs[j].oStart == hs[j].oEnd || rs == re)) {
			if hs[j].oEnd > re {
				re = hs[j].oEnd
			}
			j++
		}
		var by [2][]hunk
		for _, h := range hs[i:j] {
			by[h.side] = append(by[h.side], h)
		}
		content := func(side int, x []string) []string {
			if len(by[side]) == 0 {
				return o[rs:re]
			}
			f, l := by[side][0], by[side][len(by[side])-1]
			return x[f.sStart-(f.oStart-rs) : l.sEnd+(re-l.oEnd)]
		}
		out = append(out, o[oPos:rs]...)
		ca, cb := content(0, a), content(1, b)
		switch {
		case len(by[0]) == 0:
			out = append(out, cb...)
		case len(by[1]) == 0:
			out = append(out, ca...)
		case slices.Equal(ca, cb):
			out = append(out, ca...)
		default:
			clean = false
			out = append(out, ca...)
		}
		oPos, i = re, j
	}
	out = append(out, o[oPos:]...)
	return strings.Join(out, ""), clean
}

// splitLines splits after each "\n"; a last line without one is kept as
// it is, so joining the lines gives back s exactly.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	l := strings.SplitAfter(s, "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}

type hunk struct{ oStart, oEnd, sStart, sEnd, side int }

type pair struct{ a, b int }

// hunks turns the LCS of o and x into the regions of o that x replaced.
func hunks(o, x []string, side int) []hunk {
	var hs []hunk
	oi, xi := 0, 0
	for _, p := range append(lcs(o, x), pair{len(o), len(x)}) {
		if p.a > oi || p.b > xi {
			hs = append(hs, hunk{oi, p.a, xi, p.b, side})
		}
		oi, xi = p.a+1, p.b+1
	}
	return hs
}

// lcs returns matching index pairs of a longest common subsequence, after
// trimming the common prefix and suffix. Past maxLCSCells it matches only
// the prefix and suffix, which is still a correct (if coarse) diff.
func lcs(a, b []string) []pair {
	var out []pair
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		out = append(out, pair{pre, pre})
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	n, m := len(ma), len(mb)
	if n > 0 && m > 0 && n*m <= maxLCSCells {
		dp := make([]int32, (n+1)*(m+1))
		w := m + 1
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					dp[i*w+j] = dp[(i+1)*w+j+1] + 1
				} else if dp[(i+1)*w+j] >= dp[i*w+j+1] {
					dp[i*w+j] = dp[(i+1)*w+j]
				} else {
					dp[i*w+j] = dp[i*w+j+1]
				}
			}
		}
		for i, j := 0, 0; i < n && j < m; {
			switch {
			case ma[i] == mb[j]:
				out = append(out, pair{pre + i, pre + j})
				i++
				j++
			case dp[(i+1)*w+j] >= dp[i*w+j+1]:
				i++
			default:
				j++
			}
		}
	}
	for k := suf; k > 0; k-- {
		out = append(out, pair{len(a) - k, len(b) - k})
	}
	return out
}
