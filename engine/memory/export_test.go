package memory

// Release drops the index's in-memory state now, as the idle timer does
// (tests call it rather than wait); it reports whether it did.
func (ix *Index) Release() bool { return ix.release() }

// Released reports whether the in-memory state is dropped.
func (ix *Index) Released() bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.released
}
