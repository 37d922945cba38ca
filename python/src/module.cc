// locr._core: the native engine for the Python package (python/locr). A thin layer over
// session.h: the GIL is released for everything that waits on the engine or loads the model,
// results cross as JSON text (json.loads on the Python side), a request the server would answer
// with a 4xx raises RequestError (a ValueError: the message is the server's), any other engine
// error raises EngineError (a RuntimeError).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "core/error.h"
#include "server/errors.h"
#include "session.h"

namespace py = pybind11;
using locr::py::Job;
using locr::py::Session;

PYBIND11_MODULE(_core, m) {
  m.doc() = "locr's native engine (use the locr package: locr.LLM)";
  static py::exception<locr::server::ApiError> request_error(m, "RequestError", PyExc_ValueError);
  static py::exception<locr::Error> engine_error(m, "EngineError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const locr::server::ApiError& e) {
      py::set_error(request_error, e.what());
    } catch (const locr::Error& e) {
      py::set_error(engine_error, e.what());
    }
  });
  m.attr("__version__") = LOCR_VERSION_STRING;

  py::class_<Job, std::shared_ptr<Job>>(m, "Job")
      .def("poll", &Job::poll, py::arg("timeout_ms"), py::call_guard<py::gil_scoped_release>(),
           "waits up to timeout_ms for engine events; the choice (page) indices that finished")
      .def("done", &Job::done)
      .def("cancel", &Job::cancel)
      .def("n_choices", &Job::n_choices)
      .def("n_per_prompt", &Job::n_per_prompt)
      .def("page_count", &Job::page_count)
      .def("result", [](const Job& j, int i) { return j.result(i).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); })
      .def("page", [](const Job& j, int i) { return j.page(i).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); })
      .def("summary", [](const Job& j) { return j.summary().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); });

  py::class_<Session>(m, "Session")
      .def(py::init<const std::vector<std::string>&>(), py::arg("argv"), py::call_guard<py::gil_scoped_release>())
      .def("info", [](const Session& s) { return s.info().dump(); })
      .def("chat", &Session::chat, py::arg("body"), py::call_guard<py::gil_scoped_release>())
      .def("completion", &Session::completion, py::arg("body"), py::arg("image_urls"),
           py::call_guard<py::gil_scoped_release>())
      .def("ocr",
           [](Session& s, const std::string& body, const py::bytes& document) {
             std::string doc = document;
             py::gil_scoped_release release;
             return s.ocr(body, std::move(doc));
           },
           py::arg("body"), py::arg("document"))
      .def("encode", &Session::encode, py::arg("text"))
      .def("decode", &Session::decode, py::arg("ids"), py::arg("skip_special_tokens"))
      .def("apply_chat_template", &Session::apply_chat_template, py::arg("messages"), py::arg("template_kwargs"),
           py::arg("add_generation_prompt"))
      .def("shutdown", &Session::shutdown, py::call_guard<py::gil_scoped_release>())
      .def_static("serve_flags", &Session::serve_flags);
}
