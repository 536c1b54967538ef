use tern_server::ElicitEnum;

#[derive(serde::Deserialize, ElicitEnum)]
enum Choice {
    Yes,
    Other(String),
}

fn main() {}
