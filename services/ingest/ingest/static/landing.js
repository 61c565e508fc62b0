/*
 * The landing page's language switch. The page carries every text in English and Russian; <html lang>
 * shows one (landing.css). The server sets it from Accept-Language; a visitor's choice (the EN/RU
 * buttons) wins and is remembered in localStorage. leads.js reads <html lang> for its status texts.
 */
(function () {
  "use strict";
  var KEY = "stickerBoothLandingLang";
  var LANGS = ["en", "ru"];
  var root = document.documentElement;

  function apply(lang) {
    if (LANGS.indexOf(lang) < 0) return;
    root.lang = lang;
    var title = document.querySelector("title");
    if (title && title.getAttribute("data-title-" + lang)) {
      document.title = title.getAttribute("data-title-" + lang);
    }
    Array.prototype.forEach.call(document.querySelectorAll("[data-set-lang]"), function (button) {
      button.setAttribute("aria-pressed", button.getAttribute("data-set-lang") === lang ? "true" : "false");
    });
  }

  var stored = null;
  try {
    stored = window.localStorage.getItem(KEY);
  } catch (_blocked) {
    stored = null;
  }
  apply(stored || root.lang);
  Array.prototype.forEach.call(document.querySelectorAll("[data-set-lang]"), function (button) {
    button.addEventListener("click", function () {
      var lang = button.getAttribute("data-set-lang");
      apply(lang);
      try {
        window.localStorage.setItem(KEY, lang);
      } catch (_blocked) {
        // the switch still works for this visit
      }
    });
  });
})();
