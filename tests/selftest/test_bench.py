"""`kata bench`: turning pytest-benchmark's report into a table, ratios and a chart."""

from PIL import Image

from kata.commands import bench


def report(*rows):
    return {"benchmarks": [
        {"name": f"b{i}", "stats": {"median": median}, "extra_info": {"device": device, "style": style,
                                                                        "kind": kind, "images": images}}
        for i, (device, style, kind, median, images) in enumerate(rows)]}


REPORT = report(("cpu", "per-batch sync", "in-memory", 2.0, 640), ("cpu", "one sync", "in-memory", 1.6, 640),
                ("cuda", "per-batch sync", "in-memory", 0.5, 6400), ("cuda", "one sync", "in-memory", 0.25, 6400))


def test_rows_give_images_per_second():
    table = bench.rows(REPORT)
    assert [round(r["images_per_s"]) for r in table] == [320, 400, 12800, 25600]


def test_ratios_compare_loop_styles_and_devices():
    lines = bench.ratios(bench.rows(REPORT))
    assert "cpu: one sync per epoch runs 1.25x the images per second of a sync per batch" in lines
    assert "cuda: one sync per epoch runs 2.00x the images per second of a sync per batch" in lines
    assert "one sync: the GPU trains 64.0x the images per second of the CPU" in lines


def test_table_says_which_rows_did_not_run_and_why():
    text = bench.table_text(bench.rows(report(("cpu", "one sync", "in-memory", 1.0, 640))),
                            [("2", "no CUDA device")])
    assert "cpu" in text and "640" in text
    assert "2 rows not run: no CUDA device" in text


def test_chart_is_a_png(tmp_path):
    bench.chart(bench.rows(REPORT), tmp_path / "bench.png")
    with Image.open(tmp_path / "bench.png") as png:
        assert png.format == "PNG"
