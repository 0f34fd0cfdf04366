package io.sumi.autoconfigure.docs;

import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The anchors GitHub gives a Markdown file: one per ATX heading (outside code fences), slugged as
 * GitHub does (the heading's text, lower-cased, every character that is not a letter, a digit, a
 * space, {@code -} or {@code _} removed, spaces turned into {@code -}, a repeated slug suffixed
 * {@code -1}, {@code -2}, …), plus the {@code id} and {@code name} of HTML anchors.
 */
final class GitHubAnchors {

    private static final Pattern HEADING = Pattern.compile("^ {0,3}(#{1,6})\\s+(.*?)(?:\\s+#+)?\\s*$");
    private static final Pattern HTML_ANCHOR = Pattern.compile("<a\\s+(?:id|name)=\"([^\"]+)\"");
    private static final Pattern LINK = Pattern.compile("!?\\[([^\\]]*)\\]\\([^)]*\\)");

    private GitHubAnchors() {}

    /** Every anchor of the file's text. */
    static Set<String> of(String markdown) {
        Set<String> anchors = new LinkedHashSet<>();
        Map<String, Integer> seen = new HashMap<>();
        for (String line : MarkdownLines.outsideFences(markdown)) {
            Matcher heading = HEADING.matcher(line);
            if (heading.matches()) {
                String slug = slug(heading.group(2));
                int repeat = seen.merge(slug, 1, Integer::sum) - 1;
                anchors.add(repeat == 0 ? slug : slug + "-" + repeat);
            }
            Matcher html = HTML_ANCHOR.matcher(line);
            while (html.find()) {
                anchors.add(html.group(1));
            }
        }
        return anchors;
    }

    /** GitHub's slug of a heading's Markdown text. */
    static String slug(String heading) {
        String text = LINK.matcher(heading)
                .replaceAll("$1") // a link's text stays, its target goes
                .replaceAll("<[^>]+>", "") // HTML tags
                .replaceAll("(^|\\s)_+|_+(\\s|$)", "$1$2"); // _emphasis_ markers (not code's underscores)
        StringBuilder slug = new StringBuilder();
        text.toLowerCase(Locale.ROOT).codePoints().forEach(c -> {
            if (c == ' ') {
                slug.append('-');
            } else if (Character.isLetterOrDigit(c) || c == '-' || c == '_') {
                slug.appendCodePoint(c);
            }
        });
        return slug.toString();
    }
}
