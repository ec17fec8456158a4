// A few inline stroke icons, so the UI never depends on emoji fonts.

const PATHS = {
  menu: 'M4 6h16M4 12h16M4 18h16',
  plus: 'M12 5v14M5 12h14',
  globe: 'M12 3a9 9 0 1 0 0 18a9 9 0 1 0 0-18M3 12h18M12 3c2.5 2.7 3.5 5.7 3.5 9s-1 6.3-3.5 9M12 3c-2.5 2.7-3.5 5.7-3.5 9s1 6.3 3.5 9',
  clock: 'M12 3a9 9 0 1 0 0 18a9 9 0 1 0 0-18M12 7v5l3 2',
  stop: 'M7 7h10v10H7z',
  edit: 'M4 20h4L19 9l-4-4L4 16v4M13 7l4 4',
  undo: 'M9 14L4 9l5-5M4 9h11a5 5 0 0 1 0 10h-3',
  redo: 'M15 14l5-5-5-5M20 9H9a5 5 0 0 0 0 10h3',
  regenerate: 'M20 11a8 8 0 1 0-2.3 5.7M20 4v7h-7',
  left: 'M15 6l-6 6 6 6',
  right: 'M9 6l6 6-6 6',
  compact: 'M4 6h16M4 12h10M4 18h6M17 15l3 3-3 3',
  prompt: 'M6 3h9l4 4v14H6zM9 10h7M9 14h7M9 18h4',
  attach: 'M20.5 11.5l-8.3 8.3a5 5 0 0 1-7.1-7.1l8.7-8.7a3.4 3.4 0 0 1 4.8 4.8l-8.7 8.7a1.7 1.7 0 0 1-2.4-2.4l7.9-7.9',
  file: 'M14 3H6v18h12V7zM14 3v4h4M9 13h6M9 17h6',
  close: 'M6 6l12 12M18 6L6 18',
  check: 'M5 12.5l4.5 4.5L19 7',
  bell: 'M6 8a6 6 0 0 1 12 0c0 7 3 9 3 9H3s3-2 3-9M10.3 21a1.94 1.94 0 0 0 3.4 0',
  link: 'M10 14a4 4 0 0 0 5.7 0l3-3a4 4 0 0 0-5.7-5.7l-1 1M14 10a4 4 0 0 0-5.7 0l-3 3a4 4 0 0 0 5.7 5.7l1-1',
  mail: 'M3 6h18v12H3zM3 6l9 7 9-7',
  chat: 'M4 5h16v11H9l-5 4z',
}

export function Icon({ name, size = 16 }: { name: keyof typeof PATHS; size?: number }) {
  return (
    <svg
      className="icon"
      width={size}
      height={size}
      viewBox="0 0 24 24"
      fill={name === 'stop' ? 'currentColor' : 'none'}
      stroke="currentColor"
      strokeWidth={2}
      strokeLinecap="round"
      strokeLinejoin="round"
      aria-hidden="true"
      focusable="false"
    >
      <path d={PATHS[name]} />
    </svg>
  )
}
