// Package hostile holds no code, only a test: it builds the tools and runs
// each on hostile input (huge declared sizes in configs, checkpoints,
// checkpoint metadata, data files, PNG headers and flags) under the memory
// limit of a small board (ulimit -v 4000000, 4 GB), and checks that every
// case ends with a non-zero exit and one line naming what was wrong,
// never a panic or an out-of-memory death. See docs/reliability.md.
package hostile
