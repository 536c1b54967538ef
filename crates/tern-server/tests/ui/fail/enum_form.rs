use tern_server::ElicitForm;

#[derive(serde::Deserialize, ElicitForm)]
enum NotAForm {
    A,
}

fn main() {}
