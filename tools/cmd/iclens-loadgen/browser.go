package main

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/chromedp/chromedp"
)

// browserTimes are the view's pages as a browser loads them (headless Chromium through chromedp):
// from navigation until the cluster page shows a row per node, and until a node page has drawn
// its chart.
type browserTimes struct {
	cluster, node time.Duration
	err           error
}

func (b browserTimes) String() string {
	if b.err != nil {
		return "browser: " + b.err.Error()
	}
	return fmt.Sprintf("in Chromium: cluster page %s to a row per node, node page %s to its chart",
		b.cluster.Round(time.Millisecond), b.node.Round(time.Millisecond))
}

func measureBrowser(chromium, view string, fl *fleet) browserTimes {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.WindowSize(1400, 1250), chromedp.Flag("disable-gpu", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	defer cancelTimeout()
	// A first navigation starts the browser, which is not the page's time.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		return browserTimes{err: err}
	}
	var b browserTimes
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+view+"/cluster.html")); err != nil {
		return browserTimes{err: err}
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`document.querySelectorAll('#cluster .cluster-row').length >= %d`, fl.nodes),
		chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		return browserTimes{err: fmt.Errorf("cluster page: %w", err)}
	}
	b.cluster = time.Since(start)
	node := fl.host(max(0, fl.faultEvery-1))
	start = time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+view+"/#node="+url.QueryEscape(node))); err != nil {
		return browserTimes{err: err}
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.lens && lens.view && lens.chart && lens.view.series.length > 0`,
		chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		return browserTimes{err: fmt.Errorf("node page: %w", err)}
	}
	b.node = time.Since(start)
	return b
}
