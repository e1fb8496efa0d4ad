//go:build !linux

package capsnet

// addressSpaceLimit reports no address-space limit on platforms other than
// Linux: the memory limit of a model is then MaxModelBytes alone.
func addressSpaceLimit() (int64, bool) { return 0, false }

// machineMemory does not know the machine's memory on platforms other
// than Linux: the default limit is then 2 GiB.
func machineMemory() (int64, string, bool) { return 0, "", false }
