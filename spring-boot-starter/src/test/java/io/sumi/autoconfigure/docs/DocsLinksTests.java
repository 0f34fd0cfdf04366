package io.sumi.autoconfigure.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every relative link in {@code README.md}, {@code CONTRIBUTING.md} and {@code docs/**}{@code /*.md}
 * points to a file (or folder) of the repository and, with a {@code #fragment}, to an anchor of that
 * Markdown file ({@link GitHubAnchors}). Links inside code spans and code blocks are not links.
 */
class DocsLinksTests {

    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

    /** {@code [text](target)}, {@code ![alt](target "title")}; text may hold one level of brackets. */
    private static final Pattern INLINE =
            Pattern.compile("!?\\[(?:[^\\[\\]]|\\[[^\\]]*\\])*\\]\\(\\s*<?([^)\\s>]*)>?(?:\\s+\"[^\"]*\")?\\s*\\)");

    /** {@code [label]: target} */
    private static final Pattern DEFINITION = Pattern.compile("^ {0,3}\\[[^\\]]+\\]:\\s*<?(\\S+?)>?(?:\\s.*)?$");

    private static final Pattern CODE_SPAN = Pattern.compile("(`+)(?:(?!\\1).)+?\\1");

    private static final Pattern SCHEME = Pattern.compile("^[a-zA-Z][a-zA-Z0-9+.-]*:");

    private final Map<Path, Set<String>> anchors = new HashMap<>();

    @Test
    void everyRelativeLinkPointsToAFileAndAnAnchorThatExist() throws IOException {
        List<String> broken = new ArrayList<>();
        for (Path file : pages()) {
            List<String> lines = MarkdownLines.outsideFences(Files.readString(file, StandardCharsets.UTF_8));
            for (int i = 0; i < lines.size(); i++) {
                for (String target : targets(lines.get(i))) {
                    String problem = check(file, target);
                    if (problem != null) {
                        broken.add(ROOT.relativize(file) + ":" + (i + 1) + ": " + target + " (" + problem + ")");
                    }
                }
            }
        }
        assertThat(broken).as("broken links").isEmpty();
    }

    @Test
    void everyDocsPageIsReachableFromTheReadme() throws IOException {
        Set<Path> reached = new HashSet<>();
        Deque<Path> toRead = new ArrayDeque<>(List.of(ROOT.resolve("README.md")));
        while (!toRead.isEmpty()) {
            Path page = toRead.pop();
            if (!reached.add(page)) {
                continue;
            }
            for (String line : MarkdownLines.outsideFences(Files.readString(page, StandardCharsets.UTF_8))) {
                for (String target : targets(line)) {
                    String path = target.contains("#") ? target.substring(0, target.indexOf('#')) : target;
                    Path linked = page.getParent()
                            .resolve(URLDecoder.decode(path, StandardCharsets.UTF_8))
                            .normalize();
                    if (!path.isEmpty() && path.endsWith(".md") && Files.isRegularFile(linked)) {
                        toRead.add(linked);
                    }
                }
            }
        }
        assertThat(pages())
                .as("pages no link leads to from README.md")
                .filteredOn(page -> !reached.contains(page))
                .extracting(page -> ROOT.relativize(page).toString())
                .isEmpty();
    }

    @Test
    void linksInCodeAreNotLinksAndFragmentsFollowGitHubsSlugs() {
        assertThat(targets("see `[a](missing.md)` and [b](docs/x.md#y \"t\") and ![c](img.png)"))
                .containsExactly("docs/x.md#y", "img.png");
        assertThat(GitHubAnchors.of("# The `sumi` endpoint\n```\n# not a heading\n```\n## A — b\n## A — b\n"))
                .containsExactly("the-sumi-endpoint", "a--b", "a--b-1");
        assertThat(GitHubAnchors.slug("Long handlers: lease renewal and the max run time"))
                .isEqualTo("long-handlers-lease-renewal-and-the-max-run-time");
        assertThat(GitHubAnchors.slug("[`sumi.kafka`](x.md) and 1,000 rows (issue_12)"))
                .isEqualTo("sumikafka-and-1000-rows-issue_12");
    }

    private static List<Path> pages() throws IOException {
        List<Path> pages = new ArrayList<>(List.of(ROOT.resolve("README.md"), ROOT.resolve("CONTRIBUTING.md")));
        try (Stream<Path> docs = Files.walk(ROOT.resolve("docs"))) {
            docs.filter(path -> path.toString().endsWith(".md")).sorted().forEach(pages::add);
        }
        return pages;
    }

    static List<String> targets(String line) {
        String text = CODE_SPAN.matcher(line).replaceAll("");
        List<String> targets = new ArrayList<>();
        Matcher inline = INLINE.matcher(text);
        while (inline.find()) {
            targets.add(inline.group(1));
        }
        Matcher definition = DEFINITION.matcher(text);
        if (definition.matches()) {
            targets.add(definition.group(1));
        }
        targets.removeIf(target -> target.isEmpty() || SCHEME.matcher(target).find() || target.startsWith("//"));
        return targets;
    }

    /** What is wrong with a link of the file, or null. */
    private String check(Path file, String target) throws IOException {
        int hash = target.indexOf('#');
        String path = URLDecoder.decode(hash < 0 ? target : target.substring(0, hash), StandardCharsets.UTF_8);
        String fragment = hash < 0 ? null : target.substring(hash + 1);
        Path linked = path.isEmpty()
                ? file
                : (path.startsWith("/")
                                ? ROOT.resolve(path.substring(1))
                                : file.getParent().resolve(path))
                        .normalize();
        if (!linked.startsWith(ROOT)) {
            return "outside the repository";
        }
        if (!Files.exists(linked)) {
            return "no such file";
        }
        if (fragment == null || fragment.isEmpty()) {
            return null;
        }
        if (!linked.toString().endsWith(".md")) {
            return null; // a line anchor (#L10) of a source file
        }
        Set<String> known = anchors.get(linked);
        if (known == null) {
            known = GitHubAnchors.of(Files.readString(linked, StandardCharsets.UTF_8));
            anchors.put(linked, known);
        }
        String anchor = URLDecoder.decode(fragment, StandardCharsets.UTF_8);
        return known.contains(anchor) ? null : "no heading #" + anchor + " in " + ROOT.relativize(linked);
    }
}
