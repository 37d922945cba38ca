#include "toolkit/synth_qwen35.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "core/error.h"
#include "io/file.h"
#include "toolkit/synth_tokenizer.h"

namespace locr::toolkit {

namespace {

using ojson = nlohmann::ordered_json;

// Qwen3.5-0.8B's chat_template.jinja, byte for byte (7755 bytes, no trailing newline; the file of
// tests/fixtures/qwen35/qwen35_a, sha256 273d8e0e...).
const char* kChatTemplateSmall =
R"QWEN35TPL({%- set image_count = namespace(value=0) %}
{%- set video_count = namespace(value=0) %}
{%- macro render_content(content, do_vision_count, is_system_content=false) %}
    {%- if content is string %}
        {{- content }}
    {%- elif content is iterable and content is not mapping %}
        {%- for item in content %}
            {%- if 'image' in item or 'image_url' in item or item.type == 'image' %}
                {%- if is_system_content %}
                    {{- raise_exception('System message cannot contain images.') }}
                {%- endif %}
                {%- if do_vision_count %}
                    {%- set image_count.value = image_count.value + 1 %}
                {%- endif %}
                {%- if add_vision_id %}
                    {{- 'Picture ' ~ image_count.value ~ ': ' }}
                {%- endif %}
                {{- '<|vision_start|><|image_pad|><|vision_end|>' }}
            {%- elif 'video' in item or item.type == 'video' %}
                {%- if is_system_content %}
                    {{- raise_exception('System message cannot contain videos.') }}
                {%- endif %}
                {%- if do_vision_count %}
                    {%- set video_count.value = video_count.value + 1 %}
                {%- endif %}
                {%- if add_vision_id %}
                    {{- 'Video ' ~ video_count.value ~ ': ' }}
                {%- endif %}
                {{- '<|vision_start|><|video_pad|><|vision_end|>' }}
            {%- elif 'text' in item %}
                {{- item.text }}
            {%- else %}
                {{- raise_exception('Unexpected item type in content.') }}
            {%- endif %}
        {%- endfor %}
    {%- elif content is none or content is undefined %}
        {{- '' }}
    {%- else %}
        {{- raise_exception('Unexpected content type.') }}
    {%- endif %}
{%- endmacro %}
{%- if not messages %}
    {{- raise_exception('No messages provided.') }}
{%- endif %}
{%- if tools and tools is iterable and tools is not mapping %}
    {{- '<|im_start|>system\n' }}
    {{- "# Tools\n\nYou have access to the following functions:\n\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>" }}
    {{- '\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified format: an inner <function=...></function> block must be nested within <tool_call></tool_call> XML tags\n- Required parameters MUST be specified\n- You may provide optional reasoning for your function call in natural language BEFORE the function call, but NOT after\n- If there is no function call available, answer the question like normal with your current knowledge and do not tell the user about function calls\n</IMPORTANT>' }}
    {%- if messages[0].role == 'system' %}
        {%- set content = render_content(messages[0].content, false, true)|trim %}
        {%- if content %}
            {{- '\n\n' + content }}
        {%- endif %}
    {%- endif %}
    {{- '<|im_end|>\n' }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {%- set content = render_content(messages[0].content, false, true)|trim %}
        {{- '<|im_start|>system\n' + content + '<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" %}
        {%- set content = render_content(message.content, false)|trim %}
        {%- if not(content.startswith('<tool_response>') and content.endswith('</tool_response>')) %}
            {%- set ns.multi_step_tool = false %}
            {%- set ns.last_query_index = index %}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if ns.multi_step_tool %}
    {{- raise_exception('No user query found in messages.') }}
{%- endif %}
{%- for message in messages %}
    {%- set content = render_content(message.content, true)|trim %}
    {%- if message.role == "system" %}
        {%- if not loop.first %}
            {{- raise_exception('System message must be at the beginning.') }}
        {%- endif %}
    {%- elif message.role == "user" %}
        {{- '<|im_start|>' + message.role + '\n' + content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is string %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in content %}
                {%- set reasoning_content = content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
                {%- set content = content.split('</think>')[-1].lstrip('\n') %}
            {%- endif %}
        {%- endif %}
        {%- set reasoning_content = reasoning_content|trim %}
        {%- if loop.index0 > ns.last_query_index %}
            {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content + '\n</think>\n\n' + content }}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\n' + content }}
        {%- endif %}
        {%- if message.tool_calls and message.tool_calls is iterable and message.tool_calls is not mapping %}
            {%- for tool_call in message.tool_calls %}
                {%- if tool_call.function is defined %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {%- if loop.first %}
                    {%- if content|trim %}
                        {{- '\n\n<tool_call>\n<function=' + tool_call.name + '>\n' }}
                    {%- else %}
                        {{- '<tool_call>\n<function=' + tool_call.name + '>\n' }}
                    {%- endif %}
                {%- else %}
                    {{- '\n<tool_call>\n<function=' + tool_call.name + '>\n' }}
                {%- endif %}
                {%- if tool_call.arguments is defined %}
                    {%- for args_name, args_value in tool_call.arguments|items %}
                        {{- '<parameter=' + args_name + '>\n' }}
                        {%- set args_value = args_value | tojson | safe if args_value is mapping or (args_value is sequence and args_value is not string) else args_value | string %}
                        {{- args_value }}
                        {{- '\n</parameter>\n' }}
                    {%- endfor %}
                {%- endif %}
                {{- '</function>\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.previtem and loop.previtem.role != "tool" %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- content }}
        {{- '\n</tool_response>' }}
        {%- if not loop.last and loop.nextitem.role != "tool" %}
            {{- '<|im_end|>\n' }}
        {%- elif loop.last %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- else %}
        {{- raise_exception('Unexpected message role.') }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is true %}
        {{- '<think>\n' }}
    {%- else %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %})QWEN35TPL";

// The one block where Qwen3.5-4B's template (and that of every larger Qwen3.5) differs: it thinks
// unless enable_thinking is false (sha256 a4aee8af..., 7756 bytes; tests/fixtures/qwen35/qwen35_b).
const char* kThinkSmall =
    "    {%- if enable_thinking is defined and enable_thinking is true %}\n"
    "        {{- '<think>\\n' }}\n"
    "    {%- else %}\n"
    "        {{- '<think>\\n\\n</think>\\n\\n' }}\n"
    "    {%- endif %}\n";
const char* kThinkLarge =
    "    {%- if enable_thinking is defined and enable_thinking is false %}\n"
    "        {{- '<think>\\n\\n</think>\\n\\n' }}\n"
    "    {%- else %}\n"
    "        {{- '<think>\\n' }}\n"
    "    {%- endif %}\n";

int64_t numel(const WeightSpec& w) {
  int64_t n = 1;
  for (int64_t d : w.shape) n *= d;
  return n;
}

int64_t count_with_prefix(const Qwen35Preset& p, bool vision) {
  int64_t n = 0;
  for (const auto& w : qwen35_weight_specs(p))
    if ((w.name.rfind("model.visual.", 0) == 0) == vision) n += numel(w);
  return n;
}

void write_text(const std::string& dir, const std::string& name, const std::string& text) {
  io::write_file_atomic(io::join_path(dir, name), text);
}

}  // namespace

bool is_qwen35_preset(const std::string& name) {
  return name == "lightonocr-3-0.8b" || name == "lightonocr-3-4b" || name == "tiny-qwen35" || name == "tiny-qwen35-k";
}

Qwen35Preset qwen35_preset(const std::string& name) {
  Qwen35Preset p;
  p.name = name;
  if (name == "lightonocr-3-0.8b") return p;  // the defaults
  if (name == "lightonocr-3-4b") {
    p.text_hidden = 2560, p.text_intermediate = 9216, p.text_layers = 32, p.text_heads = 16, p.text_kv_heads = 4;
    p.linear_key_heads = 16, p.linear_value_heads = 32;
    p.vision_hidden = 1024, p.vision_intermediate = 4096, p.vision_depth = 24, p.vision_heads = 16;
    p.thinks_by_default = true;
    return p;
  }
  if (name == "tiny-qwen35") {
    p.text_hidden = 128, p.text_intermediate = 256, p.text_layers = 4, p.text_heads = 4, p.text_kv_heads = 2;
    p.linear_key_heads = 2, p.linear_value_heads = 4;
    p.vocab_size = 4096, p.n_regular_tokens = 4000;
    p.vision_hidden = 128, p.vision_intermediate = 256, p.vision_depth = 2, p.vision_heads = 2;
    return p;
  }
  if (name == "tiny-qwen35-k") {
    // Every text row a whole number of 256-element super-blocks (for quantize --type q4_k_m: Q4_K and
    // Q6_K without fallbacks), 8 layers (llama.cpp's "more bits" layers 0, 3, 6, 7), the 4B's layout
    // (value heads = 2 x key heads, untied head).
    p.text_hidden = 256, p.text_intermediate = 512, p.text_layers = 8, p.text_heads = 4, p.text_kv_heads = 2;
    p.linear_key_heads = 2, p.linear_value_heads = 4;
    p.vocab_size = 4096, p.n_regular_tokens = 4000;
    p.tie_word_embeddings = false;
    p.vision_hidden = 256, p.vision_intermediate = 512, p.vision_depth = 2, p.vision_heads = 2;
    return p;
  }
  fail(ErrorKind::kInvalidArgument, "unknown Qwen3.5 preset '", name,
       "' (expected lightonocr-3-0.8b, lightonocr-3-4b, tiny-qwen35 or tiny-qwen35-k)");
}

std::vector<WeightSpec> qwen35_weight_specs(const Qwen35Preset& p) {
  std::vector<WeightSpec> w;
  auto lin = [&](const std::string& n, int64_t out, int64_t in) { w.push_back({n, {out, in}, WeightKind::kLinear, in}); };
  auto normal = [&](const std::string& n, std::vector<int64_t> shape, float mean, float sd) {
    WeightSpec s{n, std::move(shape), WeightKind::kNormal, 0};
    s.mean = mean, s.sd = sd;
    w.push_back(std::move(s));
  };
  auto rms_norm = [&](const std::string& n, int64_t d) { normal(n, {d}, 0.0f, 0.05f); };  // scales by 1 + w
  auto bias = [&](const std::string& n, int64_t d) { normal(n, {d}, 0.0f, 0.02f); };
  auto biased = [&](const std::string& n, int64_t out, int64_t in) {
    lin(n + ".weight", out, in);
    bias(n + ".bias", out);
  };
  auto layer_norm = [&](const std::string& n, int64_t d) {
    w.push_back({n + ".weight", {d}, WeightKind::kNorm, 0});  // 1 + N(0, 0.05^2)
    bias(n + ".bias", d);
  };

  const int64_t H = p.text_hidden, I = p.text_intermediate, hd = p.text_head_dim;
  const std::string lm = "model.language_model.";
  w.push_back({lm + "embed_tokens.weight", {p.vocab_size, H}, WeightKind::kEmbedding, H});
  for (int64_t l = 0; l < p.text_layers; ++l) {
    const std::string b = lm + "layers." + std::to_string(l) + ".";
    rms_norm(b + "input_layernorm.weight", H);
    rms_norm(b + "post_attention_layernorm.weight", H);
    if (p.full_attention(l)) {
      lin(b + "self_attn.q_proj.weight", 2 * p.text_heads * hd, H);  // [q | gate] per head
      lin(b + "self_attn.k_proj.weight", p.text_kv_heads * hd, H);
      lin(b + "self_attn.v_proj.weight", p.text_kv_heads * hd, H);
      lin(b + "self_attn.o_proj.weight", H, p.text_heads * hd);
      rms_norm(b + "self_attn.q_norm.weight", hd);
      rms_norm(b + "self_attn.k_norm.weight", hd);
    } else {
      const std::string a = b + "linear_attn.";
      const int64_t nv = p.linear_value_heads, vw = nv * p.linear_value_head_dim, K = p.linear_conv_kernel;
      lin(a + "in_proj_qkv.weight", p.conv_dim(), H);
      lin(a + "in_proj_z.weight", vw, H);
      lin(a + "in_proj_b.weight", nv, H);
      lin(a + "in_proj_a.weight", nv, H);
      w.push_back({a + "conv1d.weight", {p.conv_dim(), 1, K}, WeightKind::kLinear, K});  // depthwise: fan_in K
      WeightSpec alog{a + "A_log", {nv}, WeightKind::kLogUniform, 0};
      alog.lo = 1.0f, alog.hi = 16.0f;
      w.push_back(alog);
      normal(a + "dt_bias", {nv}, 0.0f, 0.1f);
      normal(a + "norm.weight", {p.linear_value_head_dim}, 1.0f, 0.05f);  // gated RMSNorm: plain w
      lin(a + "out_proj.weight", H, vw);
    }
    lin(b + "mlp.gate_proj.weight", I, H);
    lin(b + "mlp.up_proj.weight", I, H);
    lin(b + "mlp.down_proj.weight", H, I);
  }
  rms_norm(lm + "norm.weight", H);
  if (!p.tie_word_embeddings) w.push_back({"lm_head.weight", {p.vocab_size, H}, WeightKind::kEmbedding, H});

  const int64_t V = p.vision_hidden, VI = p.vision_intermediate;
  const int64_t M = V * p.spatial_merge_size * p.spatial_merge_size;
  const int64_t patch_in = 3 * p.temporal_patch_size * p.patch_size * p.patch_size;
  const std::string vp = "model.visual.";
  w.push_back({vp + "patch_embed.proj.weight", {V, 3, p.temporal_patch_size, p.patch_size, p.patch_size},
               WeightKind::kLinear, patch_in});
  bias(vp + "patch_embed.proj.bias", V);
  normal(vp + "pos_embed.weight", {p.num_position_embeddings, V}, 0.0f, 0.02f);
  for (int64_t l = 0; l < p.vision_depth; ++l) {
    const std::string b = vp + "blocks." + std::to_string(l) + ".";
    layer_norm(b + "norm1", V);
    layer_norm(b + "norm2", V);
    biased(b + "attn.qkv", 3 * V, V);
    biased(b + "attn.proj", V, V);
    biased(b + "mlp.linear_fc1", VI, V);
    biased(b + "mlp.linear_fc2", V, VI);
  }
  layer_norm(vp + "merger.norm", V);
  biased(vp + "merger.linear_fc1", M, M);
  biased(vp + "merger.linear_fc2", H, M);  // out_hidden_size = text hidden
  std::sort(w.begin(), w.end(), [](const WeightSpec& a, const WeightSpec& b) { return a.name < b.name; });
  return w;
}

int64_t qwen35_param_count(const Qwen35Preset& p) {
  int64_t n = 0;
  for (const auto& w : qwen35_weight_specs(p)) n += numel(w);
  return n;
}
int64_t qwen35_text_param_count(const Qwen35Preset& p) { return count_with_prefix(p, false); }
int64_t qwen35_vision_param_count(const Qwen35Preset& p) { return count_with_prefix(p, true); }

nlohmann::json qwen35_config_json(const Qwen35Preset& p, DType dtype) {
  using json = nlohmann::json;  // std::map: keys sorted like save_pretrained's json.dumps(sort_keys=True)
  std::vector<std::string> layer_types;
  for (int64_t l = 0; l < p.text_layers; ++l) layer_types.push_back(p.full_attention(l) ? "full_attention" : "linear_attention");
  json text;
  text["attention_bias"] = false;
  text["attention_dropout"] = 0.0;
  text["attn_output_gate"] = true;
  text["bos_token_id"] = nullptr;
  text["eos_token_id"] = p.added_id(0);  // <|endoftext|>
  text["head_dim"] = p.text_head_dim;
  text["hidden_act"] = "silu";
  text["hidden_size"] = p.text_hidden;
  text["initializer_range"] = 0.02;
  text["intermediate_size"] = p.text_intermediate;
  text["layer_types"] = layer_types;
  text["linear_conv_kernel_dim"] = p.linear_conv_kernel;
  text["linear_key_head_dim"] = p.linear_key_head_dim;
  text["linear_num_key_heads"] = p.linear_key_heads;
  text["linear_num_value_heads"] = p.linear_value_heads;
  text["linear_value_head_dim"] = p.linear_value_head_dim;
  text["max_position_embeddings"] = p.max_position_embeddings;
  text["model_type"] = "qwen3_5_text";
  text["num_attention_heads"] = p.text_heads;
  text["num_hidden_layers"] = p.text_layers;
  text["num_key_value_heads"] = p.text_kv_heads;
  text["pad_token_id"] = nullptr;
  text["rms_norm_eps"] = 1e-06;
  text["rope_parameters"] = {{"mrope_interleaved", true},
                             {"mrope_section", p.mrope_section},
                             {"partial_rotary_factor", 0.25},
                             {"rope_theta", 10000000.0},
                             {"rope_type", "default"}};
  text["tie_word_embeddings"] = p.tie_word_embeddings;
  text["use_cache"] = true;
  text["vocab_size"] = p.vocab_size;
  json vision;
  vision["deepstack_visual_indexes"] = json::array();
  vision["depth"] = p.vision_depth;
  vision["hidden_act"] = "gelu_pytorch_tanh";
  vision["hidden_size"] = p.vision_hidden;
  vision["in_channels"] = 3;
  vision["initializer_range"] = 0.02;
  vision["intermediate_size"] = p.vision_intermediate;
  vision["model_type"] = "qwen3_5_vision";
  vision["num_heads"] = p.vision_heads;
  vision["num_position_embeddings"] = p.num_position_embeddings;
  vision["out_hidden_size"] = p.text_hidden;
  vision["patch_size"] = p.patch_size;
  vision["rope_parameters"] = {{"rope_theta", 10000.0}, {"rope_type", "axial"}};
  vision["spatial_merge_size"] = p.spatial_merge_size;
  vision["temporal_patch_size"] = p.temporal_patch_size;
  json c;
  c["architectures"] = {"Qwen3_5ForConditionalGeneration"};
  c["dtype"] = synth_torch_dtype_name(dtype);
  c["image_token_id"] = p.added_id(12);        // <|image_pad|>
  c["model_type"] = "qwen3_5";
  c["text_config"] = text;
  c["tie_word_embeddings"] = p.tie_word_embeddings;
  c["transformers_version"] = "5.24.0";
  c["video_token_id"] = p.added_id(13);        // <|video_pad|>
  c["vision_config"] = vision;
  c["vision_end_token_id"] = p.added_id(10);   // <|vision_end|>
  c["vision_start_token_id"] = p.added_id(9);  // <|vision_start|>
  return c;
}

ojson qwen35_generation_config_json(const Qwen35Preset& p) {
  // Qwen3.5's: eos = [<|im_end|>, <|endoftext|>], bos = pad = <|endoftext|>, Qwen's recommended
  // sampling (LightOnOCR-3's own file has not been published in a form we read).
  ojson g;
  g["bos_token_id"] = p.added_id(0);
  g["do_sample"] = true;
  g["eos_token_id"] = {p.added_id(2), p.added_id(0)};
  g["pad_token_id"] = p.added_id(0);
  g["temperature"] = 0.7;
  g["top_k"] = 20;
  g["top_p"] = 0.8;
  g["transformers_version"] = "5.24.0";
  return g;
}

namespace {

// What the image and the video processor configs share (after their `size`), in their key order.
void add_patch_fields(ojson& j) {
  j["patch_size"] = 16;
  j["temporal_patch_size"] = 2;
  j["merge_size"] = 2;
  j["image_mean"] = {0.5, 0.5, 0.5};
  j["image_std"] = {0.5, 0.5, 0.5};
  j["processor_class"] = "Qwen3VLProcessor";
}

}  // namespace

ojson qwen35_preprocessor_config_json() {
  ojson j;
  j["size"] = {{"longest_edge", 16777216}, {"shortest_edge", 65536}};
  add_patch_fields(j);
  j["image_processor_type"] = "Qwen2VLImageProcessorFast";
  return j;
}

ojson qwen35_video_preprocessor_config_json() {
  ojson j;
  j["size"] = {{"longest_edge", 25165824}, {"shortest_edge", 4096}};
  add_patch_fields(j);
  j["video_processor_type"] = "Qwen3VLVideoProcessor";
  return j;
}

const std::string& qwen35_chat_template(bool thinks_by_default) {
  static const std::string kSmall = kChatTemplateSmall;
  static const std::string kLarge = [] {
    std::string s = kChatTemplateSmall;
    const size_t at = s.find(kThinkSmall);
    LOCR_CHECK(at != std::string::npos && s.find(kThinkSmall, at + 1) == std::string::npos);
    return s.replace(at, std::string(kThinkSmall).size(), kThinkLarge);
  }();
  return thinks_by_default ? kLarge : kSmall;
}

MakeModelResult make_qwen35_model(const MakeModelOptions& opts, const std::function<void(uint64_t, uint64_t)>& progress) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  if (opts.dtype != DType::kBF16 && opts.dtype != DType::kF16 && opts.dtype != DType::kF32)
    fail(ErrorKind::kInvalidArgument, "--dtype must be bf16, f16 or f32");
  if (opts.out_dir.empty()) fail(ErrorKind::kInvalidArgument, "--out DIR is required");
  const Qwen35Preset p = qwen35_preset(opts.preset);
  std::error_code ec;
  std::filesystem::create_directories(opts.out_dir, ec);
  if (ec) fail(ErrorKind::kIo, "cannot create ", opts.out_dir, ": ", ec.message());

  const int n_regular = static_cast<int>(p.n_regular_tokens);
  write_text(opts.out_dir, "config.json", qwen35_config_json(p, opts.dtype).dump(2) + "\n");
  write_text(opts.out_dir, "generation_config.json", qwen35_generation_config_json(p).dump(2) + "\n");
  write_text(opts.out_dir, "preprocessor_config.json", qwen35_preprocessor_config_json().dump(2) + "\n");
  write_text(opts.out_dir, "video_preprocessor_config.json", qwen35_video_preprocessor_config_json().dump(2) + "\n");
  write_text(opts.out_dir, "chat_template.jinja", qwen35_chat_template(p.thinks_by_default));
  write_text(opts.out_dir, "tokenizer_config.json", qwen35_tokenizer_config_json(n_regular).dump(2) + "\n");
  write_text(opts.out_dir, "tokenizer.json",
             tokenizer_json(make_synthetic_bpe(n_regular), qwen35_added_tokens(), qwen35_pretokenize_regex()));

  MakeModelResult res;
  write_synth_safetensors(io::join_path(opts.out_dir, "model.safetensors"), qwen35_weight_specs(p), opts.seed,
                          opts.dtype, progress, &res);
  res.total_seconds = std::chrono::duration<double>(clock::now() - t0).count();
  return res;
}

}  // namespace locr::toolkit
