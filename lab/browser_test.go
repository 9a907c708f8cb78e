package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// browserNotebook is the lesson the browser test runs: the shortest one
// with interactive charts.
const browserNotebook = "00-devices-and-bandwidth.ipynb"

// TestBrowser is the lab as a student meets it: make lab's Jupyter server
// (scripts/lab.sh) on a temporary working folder, and notebook 00 opened in
// headless Chromium and run in full. It checks that no cell fails, that the
// interactive charts draw a canvas, and that hovering a point shows its
// value; it saves a screenshot to .build/browser/. Then it breaks the saved
// notebook's signature, as an edit outside Jupyter does, and checks that the
// reopened, untrusted notebook shows each chart's PNG.
//
// It needs what make deps installs (Chromium, Jupyter, the GoNB kernel) and
// skips where they are missing, or with -short.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the browser test starts Jupyter and Chromium")
	}
	root, _ := filepath.Abs("..")
	chromium := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		t.Skip("no Chromium on PATH (make deps installs Debian's chromium)")
	}
	if _, err := os.Stat(filepath.Join(root, ".tools", "bin", "gonb")); err != nil {
		t.Skipf("no GoNB kernel in .tools/bin (make deps builds it): %v", err)
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import notebook").Run(); err != nil {
		t.Skipf("no Jupyter Notebook for /usr/bin/python3 (make deps installs it): %v", err)
	}

	work := t.TempDir()
	base, token, stop := startLab(t, root, work)
	defer stop()

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.WindowSize(1280, 1000),
		chromedp.NoSandbox, // Chromium refuses its sandbox as root, as in CI containers
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 12*time.Minute)
	defer cancelTimeout()

	page := base + "/notebooks/" + browserNotebook + "?token=" + token
	step(t, ctx, "open "+page, chromedp.Navigate(page))
	waitJS(t, ctx, "the notebook's kernel to start",
		`!!(window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel && Jupyter.notebook.kernel.is_connected())`, 3*time.Minute)
	step(t, ctx, "run all", chromedp.Evaluate[bool](`Jupyter.notebook.execute_all_cells(), true`))
	waitJS(t, ctx, "every code cell to finish",
		`Jupyter.notebook.get_cells().filter(c => c.cell_type === 'code').every(c => typeof c.input_prompt_number === 'number')`,
		10*time.Minute)

	failures := step(t, ctx, "read the outputs", chromedp.Evaluate[[]string](`Jupyter.notebook.get_cells().flatMap((c, i) =>
		c.cell_type !== 'code' || !c.output_area.outputs.some(o => o.output_type === 'error') ? [] :
			['cell ' + (i + 1) + ': ' + c.output_area.outputs.map(o =>
				o.output_type === 'error' ? o.ename + ': ' + o.evalue + '\n' : o.text || (o.data && (o.data['text/plain'] || o.data['text/html'])) || '').join('').slice(-3000)])`))
	if len(failures) > 0 {
		t.Fatalf("cells failed:\n%s", strings.Join(failures, "\n"))
	}
	charts := step(t, ctx, "count the charts", chromedp.Evaluate[int](`document.querySelectorAll('.gpulab-chart').length`))
	canvases := step(t, ctx, "count the canvases", chromedp.Evaluate[int](`document.querySelectorAll('.gpulab-chart canvas').length`))
	if charts == 0 || canvases == 0 {
		t.Fatalf("%d interactive charts drawing %d canvases, want at least one of each", charts, canvases)
	}

	// Hover the first chart's first data point, as a mouse does.
	type point struct {
		X, Y  float64
		Label string
	}
	at := step(t, ctx, "find a data point", chromedp.Evaluate[point](`(() => {
		const el = document.querySelector('.gpulab-chart');
		el.scrollIntoView({block: 'center'});
		const chart = echarts.getInstanceByDom(el);
		const s = chart.getOption().series[0];
		const v = s.data[0];
		const value = Array.isArray(v) ? v : (v && v.value !== undefined ? v.value : v);
		const px = chart.convertToPixel({seriesIndex: 0}, Array.isArray(value) ? value : [0, value]);
		const r = el.getBoundingClientRect();
		return {X: r.left + px[0], Y: r.top + px[1], Label: s.name || ''};
	})()`))
	step(t, ctx, "hover", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, at.X-3, at.Y-3))
	step(t, ctx, "hover", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, at.X, at.Y))
	tooltip := waitJS(t, ctx, "a tooltip", `(() => {
		const el = document.querySelector('.gpulab-chart');
		for (const d of el.querySelectorAll('div')) {
			const s = getComputedStyle(d);
			if (s.zIndex === '9999999' && s.display !== 'none' && d.innerText.trim() !== '') { return d.innerText.trim(); }
		}
		return '';
	})()`, 20*time.Second)
	if !strings.ContainsAny(tooltip, "0123456789") {
		t.Errorf("the tooltip %q shows no value", tooltip)
	}
	t.Logf("%d charts, %d canvases; hovering %q at (%.0f, %.0f) shows %q", charts, canvases, at.Label, at.X, at.Y, tooltip)
	shot := filepath.Join(root, ".build", "browser", "notebook-00-tooltip.png")
	png := step(t, ctx, "screenshot", chromedp.CaptureScreenshot())
	if err := os.MkdirAll(filepath.Dir(shot), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)

	// A cell added in the browser, then saved: the notebook reopens trusted,
	// its charts drawn.
	step(t, ctx, "add a cell and save", chromedp.Evaluate[bool](
		`Jupyter.notebook.insert_cell_at_bottom('code').set_text('%%\nfmt.Println("mine")'), Jupyter.notebook.save_notebook(), true`))
	waitJS(t, ctx, "the save", `!Jupyter.notebook.dirty`, time.Minute)
	step(t, ctx, "reopen", chromedp.Navigate(page))
	waitJS(t, ctx, "the reopened notebook", `!!(window.Jupyter && Jupyter.notebook && Jupyter.notebook._fully_loaded)`, time.Minute)
	if !step(t, ctx, "trust", chromedp.Evaluate[bool](`Jupyter.notebook.trusted`)) {
		t.Errorf("the notebook saved after adding a cell reopens untrusted")
	}
	waitJS(t, ctx, "the charts drawn again", fmt.Sprintf(`document.querySelectorAll('.gpulab-chart canvas').length >= %d`, canvases), 20*time.Second)

	// Edit the file outside Jupyter: its signature no longer matches, and
	// the reopened notebook is not trusted.
	untrust(t, filepath.Join(work, browserNotebook))
	step(t, ctx, "reopen", chromedp.Navigate(page))
	waitJS(t, ctx, "the reopened notebook", `!!(window.Jupyter && Jupyter.notebook && Jupyter.notebook._fully_loaded)`, time.Minute)
	if step(t, ctx, "trust", chromedp.Evaluate[bool](`Jupyter.notebook.trusted`)) {
		t.Fatalf("the edited notebook is still trusted: the test did not break its signature")
	}
	// custom.js may redraw the outputs after the page has loaded.
	shown := waitJS(t, ctx, "the charts' PNGs", fmt.Sprintf(`document.querySelectorAll('.output_png img').length >= %d`, charts), 20*time.Second)
	drawn := step(t, ctx, "count the drawn charts", chromedp.Evaluate[int](`document.querySelectorAll('.gpulab-chart canvas').length`))
	placeholders := step(t, ctx, "count the placeholders", chromedp.Evaluate[int](`document.querySelectorAll('.gpulab-chart').length`))
	if drawn != 0 || placeholders != 0 {
		t.Errorf("untrusted: %d charts drawn (their scripts ran) and %d placeholders shown, want PNGs only (%s)", drawn, placeholders, shown)
	}
}

// step runs one browser action and stops the test if it fails.
func step[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// startLab starts make lab's server (scripts/lab.sh) on work, and returns
// its URL, its token, and a function that stops it.
func startLab(t *testing.T, root, work string) (base, token string, stop func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	b := make([]byte, 16)
	rand.Read(b)
	token = hex.EncodeToString(b)
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "lab.sh"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GPULAB_WORK="+work,
		fmt.Sprintf("JUPYTER_ARGS=--no-browser --ip=127.0.0.1 --port=%d --NotebookApp.token=%s", port, token))
	logPath := filepath.Join(t.TempDir(), "lab.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop = func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		logFile.Close()
	}
	base = fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		resp, err := http.Get(base + "/api/status?token=" + token)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			stop()
			log, _ := os.ReadFile(logPath)
			t.Fatalf("make lab's server did not answer on %s within 3 minutes:\n%s", base, log)
		}
		time.Sleep(500 * time.Millisecond)
	}
	return base, token, stop
}

// waitJS polls a JavaScript expression until it is truthy, and returns its
// value as text.
func waitJS(t *testing.T, ctx context.Context, what, expr string, limit time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[any](expr))
		if err == nil {
			switch x := v.(type) {
			case bool:
				if x {
					return "true"
				}
			case string:
				if x != "" {
					return x
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s (last error: %v)", limit, what, err)
		}
		time.Sleep(time.Second)
	}
}

// untrust edits a saved notebook as a text editor would: one more Markdown
// cell, so that the signature Jupyter keeps for it no longer matches.
func untrust(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var nb map[string]any
	if err := json.Unmarshal(data, &nb); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	cells, _ := nb["cells"].([]any)
	nb["cells"] = append(cells, map[string]any{"cell_type": "markdown", "id": "edited-outside", "metadata": map[string]any{},
		"source": []string{"edited outside Jupyter"}})
	out, err := json.MarshalIndent(nb, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}
