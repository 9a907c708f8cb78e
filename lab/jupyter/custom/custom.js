// make lab's notebook behaviour (written by `lab jupyter-config` from lab/jupyter/custom/custom.js).
define(['base/js/namespace', 'base/js/events', 'notebook/js/outputarea'], function (Jupyter, events, outputarea) {
  'use strict';
  var OutputArea = outputarea.OutputArea;

  // A cell with several charts stays as tall as its charts: no 24em scroll box.
  OutputArea.auto_scroll_threshold = -1;

  // A gpulab chart is one output with its interactive HTML and its PNG. Where the
  // notebook is not trusted, the notebook would show the HTML with its script
  // removed, an empty chart: show the PNG instead.
  function isChart(output) {
    var data = output.data || {};
    var html = data['text/html'];
    if (Array.isArray(html)) {
      html = html.join('');
    }
    return !!data['image/png'] && typeof html === 'string' && html.indexOf('class="gpulab-chart"') >= 0;
  }
  var appendMimeType = OutputArea.prototype.append_mime_type;
  OutputArea.prototype.append_mime_type = function (json, element, handleInserted) {
    if (!this.trusted && isChart(json)) {
      var pngOnly = Object.assign({}, json.data);
      delete pngOnly['text/html'];
      json = Object.assign({}, json, {data: pngOnly});
    }
    return appendMimeType.call(this, json, element, handleInserted);
  };

  // A cell added in the browser has no id, and the server adds one after it has
  // signed the notebook: the saved notebook would reopen untrusted, its charts
  // undrawn. Give each new cell its id here, before it is saved.
  events.on('create.Cell', function (event, data) {
    if (data.cell.id === undefined && Jupyter.notebook && Jupyter.notebook.nbformat_minor >= 5) {
      data.cell.id = Math.random().toString(36).slice(2, 10) + Date.now().toString(36);
    }
  });

  // This file may load after the notebook has drawn its outputs: draw the
  // untrusted charts again, now as PNGs. (clear_output makes an area trusted:
  // it expects new outputs from the kernel; these are the old ones.)
  function redrawUntrustedCharts() {
    Jupyter.notebook.get_cells().forEach(function (cell) {
      var area = cell.output_area;
      if (area && !area.trusted && area.outputs.some(isChart)) {
        var outputs = area.toJSON();
        area.clear_output(false, true);
        area.trusted = false;
        area.fromJSON(outputs, cell.metadata);
      }
    });
  }
  if (Jupyter.notebook && Jupyter.notebook._fully_loaded) {
    redrawUntrustedCharts();
  }
  events.on('notebook_loaded.Notebook', redrawUntrustedCharts);
});
