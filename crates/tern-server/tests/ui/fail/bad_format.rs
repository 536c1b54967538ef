use tern_server::ElicitForm;

#[derive(serde::Deserialize, ElicitForm)]
struct Site {
    #[form(format = "hostname")]
    host: String,
}

fn main() {}
