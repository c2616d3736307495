// Package browser holds the headless-browser test of the debug endpoint's
// HTML page (docs/debug.md#routes): a real Chromium loads the page from a real
// handler serving a real actor tree, runs its script, and the test checks
// the rendered DOM and a screenshot. The test is skipped only when
// /usr/bin/chromium is not installed.
package browser
