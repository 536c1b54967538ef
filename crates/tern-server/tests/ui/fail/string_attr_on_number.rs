use tern_server::ElicitForm;

#[derive(serde::Deserialize, ElicitForm)]
struct Order {
    #[form(max_length = 3)]
    quantity: u32,
}

fn main() {}
