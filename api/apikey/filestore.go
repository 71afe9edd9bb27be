package apikey

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// FileStore keeps key records in one JSON file (mode 0600): the embedded
// default. It serves lookups from memory and picks up changes other
// processes make to the file (`permitd keys create` while serving) within
// a second. Writes replace the file atomically (write, fsync, rename);
// two processes writing at the same instant may lose one write, which
// `keys create` reports by failing to find its record afterwards.
type FileStore struct {
	path string

	mu    sync.RWMutex
	recs  map[string]Record
	stamp fileStamp

	checked atomic.Int64 // unix nanos of the last change check
}

type fileStamp struct {
	size int64
	mod  time.Time
}

type fileJSON struct {
	Keys []Record `json:"keys"`
}

// OpenFileStore reads path; a missing file is an empty store, created by
// the first Create.
func OpenFileStore(path string) (*FileStore, error) {
	s := &FileStore{path: path}
	if err := s.reload(); err != nil {
		return nil, err
	}
	s.checked.Store(time.Now().UnixNano())
	return s, nil
}

// Path is the file's path.
func (s *FileStore) Path() string { return s.path }

// reload reads the file when it changed since the last read.
func (s *FileStore) reload() error {
	fi, err := os.Stat(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		s.mu.Lock()
		s.recs, s.stamp = map[string]Record{}, fileStamp{}
		s.mu.Unlock()
		return nil
	}
	if err != nil {
		return fmt.Errorf("apikey: key file: %w", err)
	}
	st := fileStamp{size: fi.Size(), mod: fi.ModTime()}
	s.mu.RLock()
	same := s.recs != nil && s.stamp == st
	s.mu.RUnlock()
	if same {
		return nil
	}
	recs, err := readKeyFile(s.path)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.recs, s.stamp = recs, st
	s.mu.Unlock()
	return nil
}

func readKeyFile(path string) (map[string]Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("apikey: key file: %w", err)
	}
	var f fileJSON
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("apikey: key file %s: %w", path, err)
	}
	recs := make(map[string]Record, len(f.Keys))
	for _, r := range f.Keys {
		recs[r.ID] = r
	}
	return recs, nil
}

// maybeReload checks the file at most once a second.
func (s *FileStore) maybeReload() error {
	now := time.Now().UnixNano()
	last := s.checked.Load()
	if now-last < int64(time.Second) || !s.checked.CompareAndSwap(last, now) {
		return nil
	}
	return s.reload()
}

// Lookup implements Store.
func (s *FileStore) Lookup(_ context.Context, id string) (Record, error) {
	if err := s.maybeReload(); err != nil {
		return Record{}, err
	}
	s.mu.RLock()
	r, ok := s.recs[id]
	s.mu.RUnlock()
	if !ok {
		return Record{}, ErrNotFound
	}
	return r, nil
}

// Create implements Store.
func (s *FileStore) Create(_ context.Context, r Record) error {
	return s.update(func(recs map[string]Record) error {
		if _, ok := recs[r.ID]; ok {
			return ErrExists
		}
		recs[r.ID] = r
		return nil
	})
}

// Revoke implements Store.
func (s *FileStore) Revoke(_ context.Context, id string) error {
	return s.update(func(recs map[string]Record) error {
		if _, ok := recs[id]; !ok {
			return ErrNotFound
		}
		delete(recs, id)
		return nil
	})
}

// List implements Store.
func (s *FileStore) List(context.Context) ([]Record, error) {
	if err := s.reload(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return sortedRecords(s.recs), nil
}

func sortedRecords(m map[string]Record) []Record {
	out := make([]Record, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// update re-reads the file, applies fn and writes the file back.
func (s *FileStore) update(fn func(map[string]Record) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	recs, err := readKeyFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		recs, err = map[string]Record{}, nil
	}
	if err != nil {
		return err
	}
	if err := fn(recs); err != nil {
		return err
	}
	b, err := json.MarshalIndent(fileJSON{Keys: sortedRecords(recs)}, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(s.path, append(b, '\n')); err != nil {
		return fmt.Errorf("apikey: key file: %w", err)
	}
	s.recs = recs
	if fi, err := os.Stat(s.path); err == nil {
		s.stamp = fileStamp{size: fi.Size(), mod: fi.ModTime()}
	}
	return nil
}

func writeFileAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".permitd-keys-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // no-op once renamed
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
