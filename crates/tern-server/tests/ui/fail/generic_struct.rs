use tern_server::ElicitForm;

#[derive(serde::Deserialize, ElicitForm)]
struct Wrapper<T> {
    value: T,
}

fn main() {}
