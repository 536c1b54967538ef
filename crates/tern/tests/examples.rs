//! The examples, run end to end: `client_provider` serves the
//! `stdio_form_confirm` server over HTTP and books a room through its own
//! provider, answering both rounds.

#[path = "../examples/client_provider.rs"]
#[allow(dead_code)] // its `main`
mod client_provider;

#[tokio::test]
async fn the_client_example_books_a_room_through_its_provider() {
    let ada = client_provider::Ada::default();
    let text = client_provider::book(ada.clone()).await.unwrap();
    assert_eq!(text, "booked 2 night(s) in Lisbon for Ada");
    // Round 1 asked who stays; round 2 asked to confirm, with the answers
    // of round 1 in its question.
    assert_eq!(
        *ada.asked.lock().unwrap(),
        [
            "stay: Who is staying in Lisbon, and for how many nights?",
            "confirm: Book 2 night(s) in Lisbon for Ada?",
        ]
    );
}
