// The page's first script, a classic one (no module syntax, nothing newer than ES5), so
// that it runs where play.mjs cannot: opened as file:// (browsers load no module script
// from a file), or in a browser without what play.mjs needs. There it says so in one
// line, in the browser's language; otherwise it hands play.mjs `say` for the errors a
// bundle can cause (a missing or damaged file), which need no bundle to be worded.
(function () {
  "use strict";
  // BEGIN MESSAGES: fivethousand_rl.agents.exporting.page_error_messages(), from the
  // project's catalogues (envs/locale); tests/test_ports_page.py keeps them equal.
  var MESSAGES = {
 "en": {
  "This page does not run from a file: serve its folder over HTTP, for example with {command} in {folder}, and open {url}": "This page does not run from a file: serve its folder over HTTP, for example with {command} in {folder}, and open {url}",
  "This browser is too old for this page: use a recent version of Firefox, Chrome, Edge or Safari.": "This browser is too old for this page: use a recent version of Firefox, Chrome, Edge or Safari.",
  "The bot's file {file} is missing: export the bundle again.": "The bot's file {file} is missing: export the bundle again.",
  "The bot's file {file} is damaged (it does not match bundle.json): export the bundle again.": "The bot's file {file} is damaged (it does not match bundle.json): export the bundle again.",
  "The page's scripts could not be loaded: keep its folders web and js side by side, as in ports/.": "The page's scripts could not be loaded: keep its folders web and js side by side, as in ports/."
 },
 "fr": {
  "This page does not run from a file: serve its folder over HTTP, for example with {command} in {folder}, and open {url}": "Cette page ne fonctionne pas depuis un fichier : servez son dossier en HTTP, par exemple avec {command} dans {folder}, puis ouvrez {url}",
  "This browser is too old for this page: use a recent version of Firefox, Chrome, Edge or Safari.": "Ce navigateur est trop ancien pour cette page : utilisez une version récente de Firefox, Chrome, Edge ou Safari.",
  "The bot's file {file} is missing: export the bundle again.": "Le fichier {file} du bot est manquant : exportez de nouveau le paquet.",
  "The bot's file {file} is damaged (it does not match bundle.json): export the bundle again.": "Le fichier {file} du bot est endommagé (il ne correspond pas à bundle.json) : exportez de nouveau le paquet.",
  "The page's scripts could not be loaded: keep its folders web and js side by side, as in ports/.": "Les scripts de la page n'ont pas pu être chargés : gardez ses dossiers web et js côte à côte, comme dans ports/."
 },
 "ms": {
  "This page does not run from a file: serve its folder over HTTP, for example with {command} in {folder}, and open {url}": "Halaman ini tidak berjalan daripada fail: hidangkan foldernya melalui HTTP, contohnya dengan {command} dalam {folder}, kemudian buka {url}",
  "This browser is too old for this page: use a recent version of Firefox, Chrome, Edge or Safari.": "Pelayar ini terlalu lama untuk halaman ini: gunakan versi terkini Firefox, Chrome, Edge atau Safari.",
  "The bot's file {file} is missing: export the bundle again.": "Fail {file} bot tiada: eksport semula berkas itu.",
  "The bot's file {file} is damaged (it does not match bundle.json): export the bundle again.": "Fail {file} bot rosak (tidak sepadan dengan bundle.json): eksport semula berkas itu.",
  "The page's scripts could not be loaded: keep its folders web and js side by side, as in ports/.": "Skrip halaman tidak dapat dimuatkan: simpan foldernya web dan js bersebelahan, seperti dalam ports/."
 },
 "ru": {
  "This page does not run from a file: serve its folder over HTTP, for example with {command} in {folder}, and open {url}": "Эта страница не работает из файла: раздайте её папку по HTTP, например командой {command} в {folder}, и откройте {url}",
  "This browser is too old for this page: use a recent version of Firefox, Chrome, Edge or Safari.": "Этот браузер слишком стар для этой страницы: используйте свежую версию Firefox, Chrome, Edge или Safari.",
  "The bot's file {file} is missing: export the bundle again.": "Файл бота {file} отсутствует: экспортируйте пакет заново.",
  "The bot's file {file} is damaged (it does not match bundle.json): export the bundle again.": "Файл бота {file} повреждён (не совпадает с bundle.json): экспортируйте пакет заново.",
  "The page's scripts could not be loaded: keep its folders web and js side by side, as in ports/.": "Не удалось загрузить скрипты страницы: держите её папки web и js рядом, как в ports/."
 },
 "hi": {
  "This page does not run from a file: serve its folder over HTTP, for example with {command} in {folder}, and open {url}": "यह पेज फ़ाइल से नहीं चलता: इसके फ़ोल्डर को HTTP पर परोसें, उदाहरण के लिए {folder} में {command} से, फिर {url} खोलें",
  "This browser is too old for this page: use a recent version of Firefox, Chrome, Edge or Safari.": "यह ब्राउज़र इस पेज के लिए बहुत पुराना है: Firefox, Chrome, Edge या Safari का नया संस्करण इस्तेमाल करें।",
  "The bot's file {file} is missing: export the bundle again.": "बॉट की फ़ाइल {file} नहीं मिली: बंडल फिर से एक्सपोर्ट करें।",
  "The bot's file {file} is damaged (it does not match bundle.json): export the bundle again.": "बॉट की फ़ाइल {file} खराब है (bundle.json से मेल नहीं खाती): बंडल फिर से एक्सपोर्ट करें।",
  "The page's scripts could not be loaded: keep its folders web and js side by side, as in ports/.": "पेज की स्क्रिप्ट लोड नहीं हो सकीं: इसके web और js फ़ोल्डर साथ-साथ रखें, जैसे ports/ में।"
 }
};
  // END MESSAGES
  var FROM_FILE = "This page does not run from a file: serve its folder over HTTP, for example with {command} in {folder}, and open {url}";
  var TOO_OLD = "This browser is too old for this page: use a recent version of Firefox, Chrome, Edge or Safari.";
  var NO_SCRIPTS = "The page's scripts could not be loaded: keep its folders web and js side by side, as in ports/.";

  function language() {
    var asked = /[?&]lang=([^&]*)/.exec(location.search);
    var wanted = [asked && decodeURIComponent(asked[1])]
      .concat(navigator.languages || [navigator.language]);
    for (var i = 0; i < wanted.length; i++) {
      var base = String(wanted[i] || "").toLowerCase().split(/[-_]/)[0];
      if (base && Object.prototype.hasOwnProperty.call(MESSAGES, base)) return base;
    }
    return "en";
  }

  var lang = language();

  /** Show `msgid` (one of MESSAGES), its {names} filled from `values`, as the page's one
   * line, and stop there; `detail`: the technical reason, for whoever inspects it. */
  function say(msgid, values, detail) {
    var text = MESSAGES[lang][msgid] || msgid;
    text = text.replace(/\{(\w+)\}/g, function (whole, key) {
      return values && key in values ? String(values[key]) : whole;
    });
    var headline = document.getElementById("headline");
    headline.textContent = text;
    headline.setAttribute("role", "alert");
    if (detail) headline.setAttribute("data-detail", detail);
    document.documentElement.lang = lang;
    document.body.setAttribute("data-status", "error");
    boot.stopped = true;
  }

  // What play.mjs and ../js/fivethousand.mjs use beyond ES5: modules, fetch, Intl's
  // plural rules, structuredClone, Array.prototype.at, TextDecoder.
  var supported = "noModule" in document.createElement("script") &&
    typeof fetch === "function" && typeof structuredClone === "function" &&
    typeof TextDecoder === "function" && typeof Intl === "object" &&
    typeof Intl.PluralRules === "function" && typeof [].at === "function";

  var boot = { say: say, stopped: false, language: lang };
  window.fivethousandBoot = boot;
  if (location.protocol === "file:") {
    var parts = decodeURIComponent(location.pathname).split("/");
    var page = parts.pop() || "index.html";
    var folder = parts.pop();
    say(FROM_FILE, {
      command: "python3 -m http.server 8000",
      folder: parts.join("/") || "/",
      url: "http://localhost:8000/" + folder + "/" + page + location.search,
    });
  } else if (!supported) {
    say(TOO_OLD);
  } else {
    var module = document.querySelector('script[type="module"]');
    if (module) {
      module.addEventListener("error", function () {
        if (!boot.stopped) say(NO_SCRIPTS);
      });
    }
  }
})();
