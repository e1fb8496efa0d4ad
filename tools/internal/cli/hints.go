package cli

import (
	"fmt"
	"strings"

	"github.com/capstan-ml/capstan/train/data"
)

// CheckDataDir checks, for data set name (a data.TestSets name), the
// directories it would be read from: a -data-dir flag (dir; "" when not
// given) must exist and be a directory, and so must $CAPSTAN_DATA when set
// (data.CheckEnvDir); neither is ever replaced by the data cache. A set in
// the binary reads neither. The errors name the flag or the variable and
// the path; they are not usage errors (exit status 1).
func CheckDataDir(dir, name string) error {
	if !data.ReadsFiles(name) {
		return nil
	}
	if dir != "" {
		if err := data.CheckDir(dir); err != nil {
			return fmt.Errorf("-data-dir: %w", err)
		}
	}
	return data.CheckEnvDir()
}

// SetList lists data-set names for a flag's help ("a, b, c"): a tool's -h
// names every data set the flag accepts, from the data-set table
// (data.DataSets, data.TestSets).
func SetList(names []string) string { return strings.Join(names, ", ") }
