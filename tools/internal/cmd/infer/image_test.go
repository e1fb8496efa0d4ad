package infer

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImageFlag: an -image larger than the model input is refused from its
// header (data.ReadPNG), the error naming the flag and the file; so is a
// missing file.
func TestImageFlag(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.png")
	// a PNG signature and an IHDR chunk claiming 100000×100000 grey pixels
	ihdr := []byte("IHDR\x00\x01\x86\xa0\x00\x01\x86\xa0\x08\x00\x00\x00\x00")
	hdr := binary.BigEndian.AppendUint32([]byte("\x89PNG\r\n\x1a\n"), uint32(len(ihdr)-4))
	hdr = binary.BigEndian.AppendUint32(append(hdr, ihdr...), crc32.ChecksumIEEE(ihdr))
	if err := os.WriteFile(huge, hdr, 0o644); err != nil {
		t.Fatal(err)
	}
	ck := tinyCheckpoint(t)
	want := "100000×100000 png image; the model takes at most 28×28"
	if strconv.IntSize == 32 {
		// image/png refuses the header itself there: its pixel bytes
		// overflow a 32-bit int.
		want = "png: unsupported feature: dimension overflow"
	}
	err := run([]string{"-checkpoint", ck, "-image", huge})
	if err == nil || !strings.Contains(err.Error(), "-image "+huge+": "+want) {
		t.Errorf("-image of a 100000×100000 PNG: %v", err)
	}
	absent := filepath.Join(dir, "absent.png")
	err = run([]string{"-checkpoint", ck, "-image", absent})
	if err == nil || !strings.Contains(err.Error(), "-image "+absent+": no such file") {
		t.Errorf("-image of a missing file: %v", err)
	}
}
