use tern_server::ElicitForm;

#[derive(serde::Deserialize, ElicitForm)]
struct Login {
    #[form(placeholder = "you@example.com")]
    email: String,
}

fn main() {}
