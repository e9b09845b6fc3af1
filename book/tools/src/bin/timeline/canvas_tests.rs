use super::*;

#[test]
fn ticks_are_round_and_say_as_many_decimals_as_they_need() {
    assert_eq!(tick_step(800.0), 100.0);
    assert_eq!(tick_step(1200.0), 100.0);
    assert_eq!(tick_step(1300.0), 200.0);
    assert_eq!(tick_step(0.8), 0.1);
    assert_eq!(tick_step(0.3), 0.05);
    assert_eq!(tick_text(300.0, 100.0), "300");
    assert_eq!(tick_text(150.8, 0.1), "150.8");
    assert_eq!(tick_text(150.85, 0.05), "150.85");
}

#[test]
fn a_zoomed_axis_starts_where_the_view_does() {
    let mut canvas = Canvas { out: String::new(), start_ms: 150.0, span_ms: 1.0 };
    assert_eq!(canvas.x(150.0), PLOT_LEFT);
    assert_eq!(canvas.x(151.0), PLOT_RIGHT);
    assert_eq!(canvas.x(10.0), PLOT_LEFT, "clamped");
    draw_axis(&mut canvas, 0.0, 100.0);
    for tick in [">150.0<", ">150.5<", ">151.0<"] {
        assert!(canvas.out.contains(tick), "{tick} in {}", canvas.out);
    }
    assert!(!canvas.out.contains(">149.9<") && !canvas.out.contains(">151.1<"));
}

#[test]
fn a_paragraph_breaks_between_words_to_fit() {
    let mut canvas = Canvas::new(800.0);
    let text = "one two three four five six seven eight nine ten";
    // About 6.2 px a character at 12 px: 20 characters a line.
    let down = canvas.paragraph(16.0, 100.0, 20.0 * 6.24, MUTED, text);
    assert_eq!(down, 32.0, "three lines");
    assert!(canvas.out.contains(">one two three four<"), "{}", canvas.out);
    assert_eq!(canvas.out.matches("<text").count(), 3);
    assert_eq!(canvas.paragraph(0.0, 0.0, 1000.0, MUTED, "short"), 0.0);
}
