package memory

// LiveTexts is the number of interned descriptions and permit numbers.
func (s *Store) LiveTexts() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.pi.texts.live()
}
