-- Artifacts that could act where they are shown (issue 51):
--
-- - a link with the javascript:, vbscript: or data: scheme (the check wanted only "scheme://", and
--   "javascript://%0A…" runs as script when rendered as a link) is refused;
-- - a media type takes parameters as RFC 9110 writes them and nothing else (any text after ";" was
--   accepted, markup included, and was echoed into a download's Content-Type).
--
-- Rows stored before are left as they are; the board shows their links as text and serves their
-- content with only the media type's type/subtype.

create or replace function baton_private.tg_task_artifacts__prepare() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if not baton_private.is_artifact_name(new.name) then
    raise exception 'invalid artifact name "%"', left(new.name, 100)
      using errcode = 'BT005', hint = 'Use a file name: letters, digits, ., - and _, up to 200 characters (e.g. report.json).';
  end if;
  -- A type/subtype and parameters as RFC 9110 writes them (name=token or name="quoted"), nothing else:
  -- the media type is sent on as a Content-Type header and an A2A part's mediaType.
  if new.media_type !~ '^[a-z]+/[A-Za-z0-9.+_-]+(\s*;\s*[A-Za-z0-9!#$&^_.+-]+=([A-Za-z0-9!#$&^_.+-]+|"[^"\\<>\r\n]*"))*$'
     or length(new.media_type) > 200 then
    raise exception 'invalid media type "%"', left(new.media_type, 100)
      using errcode = 'BT005', hint = 'Use a media type such as application/json or text/markdown.';
  end if;
  if new.content is not null then
    if octet_length(new.content) > 1048576 then
      raise exception 'artifact "%" is % bytes; inline content is limited to 1 MiB', new.name, octet_length(new.content)
        using errcode = 'BT005', hint = 'Store it elsewhere and attach its uri instead.';
    end if;
    new.size_bytes := octet_length(new.content);
    new.sha256 := encode(sha256(new.content), 'hex');
  else
    if new.uri !~ '^[a-z][a-z0-9+.-]*://' or length(new.uri) > 2000 then
      raise exception 'artifact "%" needs content or a uri such as https://…', new.name
        using errcode = 'BT005', hint = 'Give inline content (up to 1 MiB) or a uri.';
    end if;
    -- A link is to a file somewhere, never code to run where it is shown.
    if split_part(new.uri, ':', 1) in ('javascript', 'vbscript', 'data') then
      raise exception 'artifact "%" links with the % scheme, which is code or content rather than a place', new.name, split_part(new.uri, ':', 1)
        using errcode = 'BT005', hint = 'Link to where the file is (https://, s3://, …), or give its content inline.';
    end if;
    if new.sha256 is not null and new.sha256 !~ '^[0-9a-f]{64}$' then
      raise exception 'the sha256 of artifact "%" must be 64 lower-case hex digits', new.name using errcode = 'BT005', hint = 'Give the hex SHA-256 of the content at the uri, or none.';
    end if;
  end if;
  return new;
end
$$;
