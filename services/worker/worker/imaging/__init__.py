"""Sheet post-processing every provider's output goes through: pure functions, H×W×3/×4 uint8 arrays and
encoded bytes in and out; no I/O, no settings objects, no logging (the job handler fetches, stores and
logs what these return).

- :mod:`worker.imaging.chroma`: green-screen keying (spec/002 "Cut and chroma key");
- :mod:`worker.imaging.cut`: a keyed sheet cut into figures, sheet validity (spec/002 "Sheet validity");
- :mod:`worker.imaging.skin`: skin and hair shifts in CIELAB (ΔE2000), green spill (spec/002 "Skin
  normalisation");
- :mod:`worker.imaging.outline`: the white die-cut border (px);
- :mod:`worker.imaging.finish`: a cut figure made into a sticker, with its QA numbers;
- :mod:`worker.imaging.export`: Telegram's static sticker file (512 px side, ≤ 512 KB);
- :mod:`worker.imaging.contact`: contact sheets for pack QA.

Colour measurement (Lab, ΔE, skin masks), resampling and decoding live in :mod:`shared.imaging`, shared
with the :mod:`cartoon` engine.
"""
