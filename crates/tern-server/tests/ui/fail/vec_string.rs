use tern_server::ElicitForm;

#[derive(serde::Deserialize, ElicitForm)]
struct Tags {
    tags: Vec<String>,
}

fn main() {}
