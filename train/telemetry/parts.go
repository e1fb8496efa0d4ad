package telemetry

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/capstan-ml/capstan/capsnet/atomicfile"
	"github.com/capstan-ml/capstan/train/runfile"
)

// A compressed telemetry log (GzipName) may go on in parts: files named
// GzipName.part01, GzipName.part02, … (PartName) beside it, each a run of
// whole gzip members, that read after it, in order, as one stream. The
// Writer starts the next part at a member boundary once the file it
// appends to holds PartBytes bytes, and a resume continues the last part
// (or starts the next one when it is full), so that no file of a long run
// grows past what a Git host takes (50 MB), and a file that was committed
// full is never written again: a later commit of the run adds only its
// new parts and the last one. Open, Find, Resume and the pooling read a
// GzipName with its parts; Create removes the parts of an earlier run.

// PartBytes is the size at which the Writer closes a telemetry file and
// goes on in the next part (PartName), at the next gzip member boundary: a
// part holds at most PartBytes plus one member (MemberRecords records,
// about 40 kB for the deep model). A package variable: tests lower it.
var PartBytes int64 = 16_000_000

// MaxParts is the most parts a telemetry log may have (PartName's numbers
// run from 1 to MaxParts): at PartBytes about 16 GB of compressed log.
const MaxParts = 999

// PartName is the name of the k-th part (1 ≤ k ≤ MaxParts) of the
// compressed telemetry file named base: base.part01, …, base.part99,
// base.part100, ….
func PartName(base string, k int) string {
	return fmt.Sprintf("%s.part%02d", base, k)
}

// Parts returns the paths of the parts of the telemetry file at path, in
// their order (nil when it has none): the files PartName(base, 1), …,
// PartName(base, k) beside it. A name that starts as a part's but is not
// one (part1, part001, part00, partx, a part's name with a suffix), a gap
// in the numbers, more than MaxParts or a part that is not a regular file
// (a link, FIFO or directory: runfile.Check) is an error naming the file;
// so is a directory that cannot be listed.
func Parts(path string) ([]string, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	ks, bad, err := listParts(dir, base)
	if err != nil {
		return nil, fmt.Errorf("telemetry %s: parts: %w", path, err)
	}
	if bad != "" {
		return nil, fmt.Errorf("telemetry %s: %s is not a part's name (parts are %s, %s, …, numbered from 1 without gaps): rename or remove it", path, filepath.Join(dir, bad), PartName(base, 1), PartName(base, 2))
	}
	var paths []string
	for i, k := range ks {
		p := filepath.Join(dir, PartName(base, i+1))
		if k != i+1 {
			return nil, fmt.Errorf("telemetry %s: part %s is missing (found %s): a log's parts are read in order, without gaps", path, p, PartName(base, k))
		}
		if err := runfile.Check(p); err != nil {
			return nil, fmt.Errorf("telemetry: %w", err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// listParts lists the part numbers of base in dir, sorted, and the first
// name that starts as a part's of base but is not one ("" when none).
func listParts(dir, base string) (ks []int, bad string, err error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil // no directory, no parts
	}
	if err != nil {
		return nil, "", err
	}
	prefix := base + ".part"
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		k, err := strconv.Atoi(name[len(prefix):])
		if err != nil || k < 1 || k > MaxParts || PartName(base, k) != name {
			if bad == "" {
				bad = name
			}
			continue
		}
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks, bad, nil
}

// removeParts removes the parts of the file at path that PartName names,
// the last first (each step leaves the log a prefix of itself), and syncs
// the directory. Names that only start as a part's are left alone.
func removeParts(path string) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	ks, _, err := listParts(dir, base)
	if err != nil {
		return fmt.Errorf("telemetry %s: parts: %w", path, err)
	}
	if len(ks) == 0 {
		return nil
	}
	for _, k := range slices.Backward(ks) {
		p := filepath.Join(dir, PartName(base, k))
		if err := runfile.Check(p); err != nil {
			return fmt.Errorf("telemetry: %w", err)
		}
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("telemetry: removing an earlier log's part: %w", err)
		}
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		return fmt.Errorf("telemetry %s: %w", dir, err)
	}
	return nil
}

// openParts opens the telemetry file at path and its parts (Parts) for
// reading: r reads them as one stream, c closes every file. With no parts
// it is the file alone.
func openParts(path string) (r io.Reader, c io.Closer, err error) {
	parts, err := Parts(path)
	if err != nil {
		return nil, nil, err
	}
	var files multiCloser
	defer func() {
		if err != nil {
			files.Close()
		}
	}()
	var rs []io.Reader
	for _, p := range append([]string{path}, parts...) {
		f, err := runfile.Open(p)
		if err != nil {
			return nil, nil, fmt.Errorf("telemetry: %w", err)
		}
		files = append(files, f)
		rs = append(rs, f)
	}
	if len(rs) == 1 {
		return rs[0], files, nil
	}
	return io.MultiReader(rs...), files, nil
}

// multiCloser closes every file, returning the first error.
type multiCloser []*os.File

// Close closes the files.
func (m multiCloser) Close() error {
	var first error
	for _, f := range m {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// segments is a compressed telemetry file and its parts, open for a
// resume: path[i] of size[i] bytes.
type segments struct {
	path  []string
	files []*os.File
	size  []int64
}

// openSegments opens the GzipName at path and its parts read-write.
func openSegments(path string) (*segments, error) {
	parts, err := Parts(path)
	if err != nil {
		return nil, err
	}
	s := &segments{path: append([]string{path}, parts...)}
	for _, p := range s.path {
		f, err := runfile.OpenFile(p, os.O_RDWR, 0)
		if err == nil {
			var st os.FileInfo
			if st, err = f.Stat(); err == nil {
				s.files = append(s.files, f)
				s.size = append(s.size, st.Size())
				continue
			}
			f.Close()
		}
		s.close()
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	return s, nil
}

// reader reads the segments as one stream.
func (s *segments) reader() io.Reader {
	rs := make([]io.Reader, len(s.files))
	for i, f := range s.files {
		rs[i] = io.NewSectionReader(f, 0, s.size[i])
	}
	return bufio.NewReaderSize(io.MultiReader(rs...), 64<<10)
}

// locate returns the segment and the offset in it of the stream's byte
// offset off: the segment that ends at off when member is false (a cut
// at a boundary keeps the earlier segment whole), the one that starts
// there when it is true (the member that begins at off).
func (s *segments) locate(off int64, member bool) (int, int64) {
	var start int64
	for i, n := range s.size {
		if off < start+n || (!member && off == start+n) {
			return i, off - start
		}
		start += n
	}
	last := len(s.size) - 1
	return last, s.size[last]
}

// cutAfter closes and removes the segments after i, the last first, and
// syncs the directory.
func (s *segments) cutAfter(i int) error {
	if i+1 >= len(s.path) {
		return nil
	}
	for j := len(s.path) - 1; j > i; j-- {
		s.files[j].Close()
		if err := os.Remove(s.path[j]); err != nil {
			s.files, s.path, s.size = s.files[:j], s.path[:j], s.size[:j]
			return err
		}
	}
	s.files, s.path, s.size = s.files[:i+1], s.path[:i+1], s.size[:i+1]
	return atomicfile.SyncDir(filepath.Dir(s.path[0]))
}

// close closes the files.
func (s *segments) close() { multiCloser(s.files).Close() }

// sizeWriter writes to f and counts the bytes written.
type sizeWriter struct {
	f *os.File
	n int64
}

// Write writes to the file.
func (s *sizeWriter) Write(p []byte) (int, error) {
	n, err := s.f.Write(p)
	s.n += int64(n)
	return n, err
}

// nextPart makes the Writer go on in the next part of its log: the file
// it wrote is synced and closed, the part is created (never over an
// existing file) and the directory synced, so that a part is never found
// without the bytes before it.
func (w *Writer) nextPart() error {
	if w.part >= MaxParts {
		return fmt.Errorf("telemetry %s: the log has %d parts already (MaxParts)", w.base, MaxParts)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	path := filepath.Join(filepath.Dir(w.base), PartName(filepath.Base(w.base), w.part+1))
	f, err := runfile.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("telemetry: next part: %w", err)
	}
	if err := atomicfile.SyncDir(filepath.Dir(path)); err != nil {
		f.Close()
		return fmt.Errorf("telemetry: next part: %w", err)
	}
	if err := w.f.Close(); err != nil {
		f.Close()
		return fmt.Errorf("telemetry: %w", err)
	}
	w.f, w.path, w.part = f, path, w.part+1
	w.sw.f, w.sw.n = f, 0
	return nil
}
