#include "towerflow/train/event_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <type_traits>
#include <variant>

#include "event.pb.h"
#include "graph.pb.h"

namespace tw::train {
namespace {

// tensor_content is little-endian with one byte per bool; towerflow's buffers
// hold exactly that on the hosts it builds for.
static_assert(std::endian::native == std::endian::little, "tensor_content is little-endian");
static_assert(sizeof(bool) == 1, "tensor_content holds one byte per bool");

double WallTimeSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// TF's port::Hostname: gethostname, "localhost" when that fails.
std::string Hostname() {
  char name[1024];
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  name[sizeof(name) - 1] = '\0';
  return name;
}

tensorflow::DataType ToProto(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return tensorflow::DT_FLOAT;
    case DataType::kFloat64: return tensorflow::DT_DOUBLE;
    case DataType::kInt32: return tensorflow::DT_INT32;
    case DataType::kInt64: return tensorflow::DT_INT64;
    case DataType::kUInt8: return tensorflow::DT_UINT8;
    case DataType::kBool: return tensorflow::DT_BOOL;
    case DataType::kString: return tensorflow::DT_STRING;
    case DataType::kInvalid: break;
  }
  return tensorflow::DT_INVALID;
}

void ToProto(const PartialShape& shape, tensorflow::TensorShapeProto* out) {
  if (!shape.known_rank()) {
    out->set_unknown_rank(true);
    return;
  }
  for (int64_t d : shape.dims()) out->add_dim()->set_size(d);
}

void ToProto(const Tensor& tensor, tensorflow::TensorProto* out) {
  out->set_dtype(ToProto(tensor.dtype()));
  if (!tensor.IsInitialized()) return;
  ToProto(PartialShape(tensor.shape()), out->mutable_tensor_shape());
  if (tensor.dtype() == DataType::kString) {
    for (const std::string& s : tensor.flat<std::string>()) out->add_string_val(s);
  } else {
    out->set_tensor_content(static_cast<const char*>(tensor.raw_data()), tensor.TotalBytes());
  }
}

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

// Every alternative of tw::AttrValue has a member of TF's AttrValue; a float
// attr narrows to float as TF's attrs are.
void ToProto(const AttrValue& value, tensorflow::AttrValue* out) {
  std::visit(Overloaded{
                 [&](int64_t v) { out->set_i(v); },
                 [&](double v) { out->set_f(static_cast<float>(v)); },
                 [&](bool v) { out->set_b(v); },
                 [&](const std::string& v) { out->set_s(v); },
                 [&](DataType v) { out->set_type(ToProto(v)); },
                 [&](const PartialShape& v) { ToProto(v, out->mutable_shape()); },
                 [&](const std::vector<int64_t>& v) {
                   auto* list = out->mutable_list();
                   for (int64_t i : v) list->add_i(i);
                 },
                 [&](const std::vector<DataType>& v) {
                   auto* list = out->mutable_list();
                   for (DataType t : v) list->add_type(ToProto(t));
                 },
                 [&](const Tensor& v) { ToProto(v, out->mutable_tensor()); },
                 [&](const std::vector<double>& v) {
                   auto* list = out->mutable_list();
                   for (double f : v) list->add_f(static_cast<float>(f));
                 },
             },
             value);
}

// "x" for output 0, "x:i" otherwise: how TF's NodeDef names a data input.
std::string InputName(const Output& input) {
  if (input.index == 0) return input.node->name();
  return input.node->name() + ":" + std::to_string(input.index);
}

void ToProto(const Node& node, const std::map<std::string, std::string>& assigned_devices,
             tensorflow::NodeDef* out) {
  out->set_name(node.name());
  out->set_op(node.op());
  for (const Output& input : node.inputs()) out->add_input(InputName(input));
  for (const Node* control : node.control_inputs()) out->add_input("^" + control->name());
  auto assigned = assigned_devices.find(node.name());
  out->set_device(assigned != assigned_devices.end() ? assigned->second : node.requested_device());
  auto& attrs = *out->mutable_attr();
  for (const auto& [name, value] : node.attrs().values()) ToProto(value, &attrs[name]);
  // TF keeps colocation in "_class" and, with add_shapes, output shapes in
  // "_output_shapes"; TensorBoard shows the latter on the graph's edges.
  if (!node.colocation_groups().empty() && attrs.count("_class") == 0) {
    auto* list = attrs["_class"].mutable_list();
    for (const std::string& group : node.colocation_groups()) list->add_s(group);
  }
  if (node.num_outputs() > 0 && attrs.count("_output_shapes") == 0) {
    auto* list = attrs["_output_shapes"].mutable_list();
    for (int i = 0; i < node.num_outputs(); ++i) ToProto(node.output_shape(i), list->add_shape());
  }
}

}  // namespace

StatusOr<std::unique_ptr<EventFileWriter>> EventFileWriter::Create(const std::string& logdir,
                                                                   const std::string& suffix) {
  std::error_code ec;
  std::filesystem::create_directories(logdir, ec);
  if (ec) return tw::internal::FileError(logdir, "cannot create the log directory", ec.value());
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%010lld", static_cast<long long>(std::time(nullptr)));
  std::string path = (std::filesystem::path(logdir) / "events.out.tfevents.").string() + seconds + "." +
                     Hostname() + suffix;
  // O_EXCL claims the name, so two writers started in the same second never
  // truncate each other's file; RecordWriter then reopens the empty file.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int err = errno;
    Status s = tw::internal::FileError(path, "cannot create the event file", err);
    if (err == EEXIST) s = errors::AlreadyExists(s.message(), " (pass a suffix to tell writers apart)");
    return s;
  }
  ::close(fd);
  TW_ASSIGN_OR_RETURN(std::unique_ptr<RecordWriter> records, RecordWriter::Open(path));
  std::unique_ptr<EventFileWriter> writer(new EventFileWriter(path, std::move(records)));
  tensorflow::Event event;
  event.set_wall_time(WallTimeSeconds());
  event.set_file_version(kEventFileVersion);
  {
    std::lock_guard<std::mutex> lock(writer->mu_);
    TW_RETURN_IF_ERROR(writer->writer_->WriteRecord(event.SerializeAsString()));
    // TensorBoard recognises the file by this first event: make it visible now.
    TW_RETURN_IF_ERROR(writer->writer_->Flush());
  }
  return writer;
}

EventFileWriter::EventFileWriter(std::string path, std::unique_ptr<RecordWriter> writer)
    : path_(std::move(path)), writer_(std::move(writer)) {}

EventFileWriter::~EventFileWriter() { Close().IgnoreError(); }

Status EventFileWriter::AddScalar(const std::string& tag, double value, int64_t step) {
  return AddScalars(step, {{tag, value}});
}

Status EventFileWriter::AddScalars(int64_t step, const std::vector<std::pair<std::string, double>>& values) {
  tensorflow::Event event;
  event.set_step(step);
  tensorflow::Summary* summary = event.mutable_summary();
  for (const auto& [tag, value] : values) {
    tensorflow::Summary::Value* v = summary->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  std::lock_guard<std::mutex> lock(mu_);
  event.set_wall_time(WallTimeSeconds());
  return writer_->WriteRecord(event.SerializeAsString());
}

Status EventFileWriter::AddSummary(int64_t step, const std::string& summary) {
  tensorflow::Event event;
  event.set_step(step);
  if (!event.mutable_summary()->ParseFromString(summary)) {
    return errors::InvalidArgument("add_summary: ", summary.size(), " bytes that are not a serialized Summary");
  }
  std::lock_guard<std::mutex> lock(mu_);
  event.set_wall_time(WallTimeSeconds());
  return writer_->WriteRecord(event.SerializeAsString());
}

Status EventFileWriter::AddGraph(const Graph& graph, const std::map<std::string, std::string>& assigned_devices) {
  tensorflow::GraphDef def;
  for (int id = 0; id < graph.num_nodes(); ++id) ToProto(*graph.node(id), assigned_devices, def.add_node());
  std::string bytes;
  if (!def.SerializeToString(&bytes)) {
    return errors::InvalidArgument(path_, ": the graph's GraphDef cannot be serialized (", def.ByteSizeLong(),
                                   " bytes; protobuf's limit is 2 GiB)");
  }
  tensorflow::Event event;
  event.set_graph_def(std::move(bytes));
  std::lock_guard<std::mutex> lock(mu_);
  event.set_wall_time(WallTimeSeconds());
  return writer_->WriteRecord(event.SerializeAsString());
}

Status EventFileWriter::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  return writer_->Flush();
}

Status EventFileWriter::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  return writer_->Close();
}

}  // namespace tw::train
