use tern_server::ElicitForm;

#[derive(serde::Deserialize, ElicitForm)]
struct Pair(String, String);

fn main() {}
