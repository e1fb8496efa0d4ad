// Command pool max-pools a run's telemetry into a bounded number of
// records and writes it gzip-compressed, the form in which a run
// directory is committed (see train/telemetry's Log.Pool: every record of
// the result is the maximum over a window of consecutive steps, and the
// window is recorded in the file's header; the dark-capsule analysis and
// the report's heatmaps read it as they read the full log).
//
//	go run ./tools/pool [-max N] SRC DST
//
// SRC is telemetry.ndjson or telemetry.ndjson.gz; DST (replaced
// atomically) must not be SRC. A bad flag or argument exits 2, any other
// error 1.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/train/telemetry"
)

func main() {
	os.Exit(cli.Exit(os.Stderr, "pool", run(os.Args[1:])))
}

const (
	summary = "pool: max-pools a telemetry file into at most -max records, gzip-compressed; usage: pool [-max N] SRC DST"
	notes   = `SRC is a telemetry file (plain or gzip); DST is written atomically and must
not be SRC. Exit status: 0 done, 1 error (a file), 2 bad flag or argument.
`
)

// DefaultMax is -max's default: the report draws at most 600 columns, so
// about 1,000 records keep every column of its heatmaps a pool of whole
// steps.
const DefaultMax = 1000

func run(args []string) error {
	fs := flag.NewFlagSet("pool", flag.ContinueOnError)
	cli.SetUsage(fs, summary, notes)
	maxRecords := fs.Int("max", DefaultMax, "pool into at most this many records (1 to 2^24)")
	if err := cli.Parse(fs, args, 2, os.Stdout); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return cli.Usagef("want SRC and DST (see -h)")
	}
	if err := cli.Int("max", *maxRecords, 1, telemetry.MaxRecords); err != nil {
		return err
	}
	src, dst := fs.Arg(0), fs.Arg(1)
	if err := cli.CheckOutputs([]cli.Path{{Flag: "DST", Value: dst}}, []cli.Path{{Flag: "SRC", Value: src}}); err != nil {
		return err
	}
	g, err := telemetry.PoolFile(src, dst, *maxRecords)
	if err != nil {
		return err
	}
	p := g.Header.Pool
	if p == nil {
		fmt.Printf("%s: %d records, written to %s unpooled\n", src, len(g.Records), dst)
		return nil
	}
	fmt.Printf("%s: %d records from step %d pooled by %d into %d, written to %s\n", src, p.Records, p.First, p.Window, len(g.Records), dst)
	return nil
}
