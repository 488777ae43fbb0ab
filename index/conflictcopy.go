package index

// ConflictCopyOf says whether h is a merge conflict copy and of which
// note: the index's own record (ConflictOf, filled from
// memory_conflicts) or, for a hit that did not come through it, the
// copy's frontmatter key (ConflictKey), which counts even when empty.
// The hooks and the root's contradiction check ask it alike.
func (h Hit) ConflictCopyOf() (of string, ok bool) {
	if h.ConflictOf != "" {
		return h.ConflictOf, true
	}
	return h.ExtraValue(ConflictKey)
}
