package study

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// AccuracyLine is the line that prints the accuracy on the analysed
// images over the checkpoints (in percent, each checkpoint's too when
// there are several).
func (r *Result) AccuracyLine() string {
	images := 0
	if len(r.Checkpoints) > 0 {
		images = r.Checkpoints[0].Images
	}
	if len(r.Checkpoints) <= 1 {
		return fmt.Sprintf("Accuracy on the %d analysed image(s): %.2f%%", images, 100*r.Accuracy.Mean)
	}
	each := make([]string, len(r.Checkpoints))
	for i, c := range r.Checkpoints {
		each[i] = fmt.Sprintf("%.2f%%", 100*c.Accuracy)
	}
	return fmt.Sprintf("Accuracy on the %d analysed image(s): %.2f ± %.2f%% (%s)", images, 100*r.Accuracy.Mean, 100*r.Accuracy.Std, strings.Join(each, ", "))
}

// WriteText prints the analysis: the model and data set, the accuracy,
// Tables 1 and 2 (as Markdown when markdown is set) and each checkpoint's
// invariance curves as a table when measured.
func (r *Result) WriteText(w io.Writer, markdown bool) error {
	model := ""
	if len(r.Checkpoints) > 0 {
		model = r.Checkpoints[0].Model
	}
	if _, err := fmt.Fprintf(w, "%s on %s (%d checkpoint(s))\n%s\n", model, r.Data, len(r.Checkpoints), r.AccuracyLine()); err != nil {
		return err
	}
	var err error
	if markdown {
		err = r.Tables.WriteMarkdown(w)
	} else {
		err = r.Tables.WriteText(w)
	}
	if err != nil || len(r.Checkpoints) == 0 || len(r.Checkpoints[0].Invariance) == 0 {
		return err
	}
	var b strings.Builder
	b.WriteString("\nViewpoint invariance: mean over capsules of corr(norms on original, on transformed images), per layer\n")
	for _, c := range r.Checkpoints {
		fmt.Fprintf(&b, "%s\n%-12s %9s", c.Checkpoint, "family", "magnitude")
		for _, l := range c.Invariance[0].Layers {
			fmt.Fprintf(&b, " %9s", l.Name)
		}
		b.WriteString("\n")
		for _, pt := range c.Invariance {
			fmt.Fprintf(&b, "%-12s %9g", pt.Family, pt.Magnitude)
			for _, l := range pt.Layers {
				if l.Corr == nil {
					fmt.Fprintf(&b, " %9s", "–")
				} else {
					fmt.Fprintf(&b, " %9.4f", *l.Corr)
				}
			}
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "%s\n", invarianceLegend)
	_, err = io.WriteString(w, b.String())
	return err
}

// invarianceLegend is the legend under the invariance tables.
const invarianceLegend = `magnitude: degrees (rotation, shear), scale factor (scale), pixels (translations); each layer's
figure is a mean over its capsules with a defined corr, – when none has one (every capsule dead).`

// WriteJSON writes every figure of the analysis as indented JSON (the
// schema of tools/analyze -json, Schema, docs/json.md): the schema, the
// data set, the accuracy and tables over all checkpoints, then each
// checkpoint's.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	out := *r
	out.Schema = Schema
	if err := enc.Encode(&out); err != nil {
		return fmt.Errorf("study: json: %w", err)
	}
	return nil
}
